"""The AWS cost floor per example event, measured as deployed, against issue 15's targets.

``lockgate cost``'s meter (``lockgate_infra.cost.meter``) runs the example traffic through the
functions exactly as ``lockgate.runtime`` builds them for the deployed ``lockgate.toml`` and
``template.yaml`` (capacity settings included), on moto, and counts every AWS call (refused
conditional writes too) and every write unit, transactions at two per item-KB and secondary
indexes included. Targets per example event:

- worker AWS calls **<= 35**;
- DynamoDB write units (tables + indexes) **<= 45**;
- receiver: **2** AWS calls per new delivery and **1** per duplicate (``benchmarks.receipt_calls``
  measures those against the Powertools baseline; here the receiver's average is shown).

Run: ``python -m benchmarks.cost_floor [--events 30]``; exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import sys

from lockgate_infra.cost.meter import Usage, measure

WORKER_CALLS_TARGET = 35.0
WRITE_UNITS_TARGET = 45.0


def render(usage: Usage) -> tuple[str, bool]:
    """The figures per event with each target, and whether all were met."""
    e = usage.per_event
    worker = e(usage.functions["worker"].aws_calls)
    units = e(usage.write_units + usage.index_write_units)
    checks = [
        ("worker AWS calls per event", worker, WORKER_CALLS_TARGET),
        ("DynamoDB write units per event (tables + indexes)", units, WRITE_UNITS_TARGET),
    ]
    lines = [f"measured over {usage.events} example events, as deployed:"]
    for name, function in usage.functions.items():
        lines.append(f"  {name:<9} {e(function.aws_calls):5.1f} AWS calls per event")
    lines.append(
        f"  DynamoDB {e(usage.write_units):.1f} table + {e(usage.index_write_units):.1f} index write units, "
        f"{e(usage.read_units):.1f} read units per event"
    )
    top = ", ".join(f"{op} {e(n):.2f}" for op, n in usage.operations.most_common(6))
    lines += [f"  busiest calls per event: {top}", ""]
    met = True
    for name, value, target in checks:
        ok = value <= target
        met &= ok
        lines.append(f"{name}: {value:.1f}, target <= {target:g}: {'MET' if ok else 'NOT MET'}")
    return "\n".join(lines), met


def main(argv: list[str] | None = None) -> int:
    """Print the figures and targets; 1 when a target is missed."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=30, help="example events to meter (default 30)")
    args = parser.parse_args(argv)
    text, met = render(measure(args.events))
    print(text)
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
