"""Tokens and dollars billed per example run, with and without prompt caching.

The shop's support-inbox task answers the same example emails twice through the real loop,
the real SDK and the local stub (which bills cache writes and reads for an identical prefix
up to the last cache_control marker, as the API does): once with the markers Lockgate adds,
once without. Prints both and the ratio. Run: `python -m benchmarks.prompt_caching`.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from typing import Any

from lockgate.model.client import Usage
from lockgate.model.pricing import cost_usd
from lockgate_infra.evals.shoprig import Email, shop_rig

EMAILS = [
    Email("ada@example.com", "Where is my order A-1042?", "Hi, where is order A-1042? It has been a week."),
    Email("grace@example.com", "Broken teapot A-2001", "My order A-2001 arrived broken. Please refund it."),
    Email("ada@example.com", "Returns", "How do I return the jacket from order A-1043?"),
    Email("grace@example.com", "Order A-2002", "When will A-2002 ship?"),
]


def measure(cache_ttl: str, rounds: int = 1) -> dict[str, Any]:
    """Answer every example email ``rounds`` times; sum the usage the stub billed."""
    from lockgate_infra.stub import shop_model

    with shop_rig(shop_model, cache_ttl=cache_ttl) as rig:
        runs = 0
        for r in range(rounds):
            for n, email in enumerate(EMAILS):
                rig.answer(email, f"msg-bench-{r}-{n}")
                runs += 1
        totals = rig.stub.usage_totals
        calls = rig.stub.calls
        model = rig.task.model
    usage = Usage(**{k: totals[k] for k in dataclasses.asdict(Usage())})
    ttl = "5m" if cache_ttl == "off" else cache_ttl
    return {
        "runs": runs,
        "calls": calls,
        "usage": usage.as_dict(),
        "usd": cost_usd(model, usage, ttl),
        "model": model,
    }


def main(argv: list[str] | None = None) -> int:
    """Print the comparison; --json for machine-readable output."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=2, help="times to answer the example emails")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    off, on = measure("off", args.rounds), measure("5m", args.rounds)
    if args.json:
        print(json.dumps({"without_caching": off, "with_caching": on}, indent=2))
        return 0
    print(f"Support-inbox runs: {on['runs']} ({len(EMAILS)} emails x {args.rounds}), model {on['model']}")
    print(f"{'':<22}{'input':>9}{'cache write':>13}{'cache read':>12}{'output':>9}{'dollars':>11}")
    for label, row in (("without caching", off), ("with caching (5m)", on)):
        u = row["usage"]
        print(
            f"{label:<22}{u['input_tokens']:>9}{u['cache_creation_input_tokens']:>13}"
            f"{u['cache_read_input_tokens']:>12}{u['output_tokens']:>9}{row['usd']:>11.4f}"
        )
    billed_off = off["usage"]["input_tokens"] + off["usage"]["cache_read_input_tokens"]
    print(f"\nratio of dollars, with/without caching: {on['usd'] / off['usd']:.3f}")
    print(
        f"uncached input tokens per run: {on['usage']['input_tokens'] / on['runs']:.0f} with caching, "
        f"{billed_off / off['runs']:.0f} without"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
