"""``lockgate cost``: the command, and the report it prints from the measured usage."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from lockgate_infra.cost.bill import FULL_CPU_MB, Assumptions, Bill, bill
from lockgate_infra.cost.hotkeys import render_keys
from lockgate_infra.cost.meter import LOG_BYTES_PER_EVENT, Usage, measure
from lockgate_infra.cost.model_dollars import model_usd, priced_as
from lockgate_infra.cost.prices import PRICES_CHECKED, REGION
from lockgate_infra.cost.scale import render_scale
from lockgate_infra.evals.shoprig import ROOT
from lockgate_infra.options import at_least_one, non_negative_float, positive_int


def render(
    usage: Usage,
    result: Bill,
    months: list[int],
    assume: Assumptions,
    out: TextIO,
    priced: str = "the price table",
) -> None:
    """The report: measured usage per event, then dollars per month at each volume."""
    e = usage.per_event
    lines = [
        f"Measured over {usage.events} example events ({usage.posts} HTTP requests with duplicates, "
        "forgeries and provider retries), per event:"
    ]
    for name, function in usage.functions.items():
        own_ms = 1000 * e(max(0.0, function.own_seconds))
        lines.append(
            f"  {name:<9} {e(function.invocations):.2f} invocations, {e(function.aws_calls):.1f} AWS calls, "
            f"{own_ms:.1f} ms own compute, {function.memory_mb} MB"
        )
    lines.append(
        f"  DynamoDB {e(usage.write_units + usage.index_write_units):.1f} write units "
        f"({e(usage.index_write_units):.1f} on indexes), {e(usage.read_units):.1f} read units; "
        f"SQS {e(usage.sqs_requests):.1f} requests; S3 {e(usage.s3_puts + usage.s3_gets):.2f}; "
        f"SES {e(usage.emails):.2f} emails; model {e(usage.model_calls):.1f} calls"
    )
    lines += render_keys(usage.keys, usage.events)
    lines.append(
        f"Assumed: {assume.call_ms:g} ms per AWS call; {assume.model_seconds:g} s per model call, billed "
        f"to the worker; SQS records per worker invocation: {assume.records_per_batch:g} (run side by "
        f"side, up to {usage.functions['worker'].concurrency}); CPU time stretched below {FULL_CPU_MB} MB; "
        f"{LOG_BYTES_PER_EVENT} log bytes per event. Prices: {REGION} list prices "
        f"checked {PRICES_CHECKED}, no free tiers.\n"
    )
    lines.append("| | per event | " + " | ".join(f"{n:,} events/month" for n in months) + " |")
    lines.append("|---|---|" + "---|" * len(months))
    for line, dollars in sorted(result.per_event.items(), key=lambda kv: -kv[1]):
        lines.append(
            f"| {line} | ${dollars:.7f} | " + " | ".join(f"${dollars * n:,.2f}" for n in months) + " |"
        )
    fixed = sum(result.fixed.values())
    detail = ", ".join(f"{k} ${v:.2f}" for k, v in result.fixed.items())
    lines.append(f"| fixed monthly ({detail}) | | " + " | ".join(f"${fixed:,.2f}" for _ in months) + " |")
    totals = " | ".join(f"**${result.total(n):,.2f}**" for n in months)
    lines.append(f"| **AWS total** | | {totals} |")
    model = result.model_per_event
    cells = " | ".join(f"${model * n:,.2f}" for n in months)
    lines.append(f"| model (tokens × {priced}), apart from AWS | ${model:.4f} | {cells} |")
    print("\n".join(lines), file=out)


def add_cost_parser(commands: Any, run: Callable[[Any], int]) -> None:
    """``lockgate cost``."""
    cost = commands.add_parser("cost", help="AWS dollars per month at N events, from usage measured offline")
    cost.add_argument(
        "--events",
        type=positive_int,
        action="append",
        help="events a month (repeatable; default 1k, 100k, 1M)",
    )
    cost.add_argument(
        "--sample", type=positive_int, default=30, help="example events to measure (default 30)"
    )
    cost.add_argument(
        "--call-ms", type=non_negative_float, default=Assumptions.call_ms, help="assumed ms per AWS call"
    )
    cost.add_argument(
        "--model-seconds",
        type=non_negative_float,
        default=Assumptions.model_seconds,
        help="assumed s per model call",
    )
    cost.add_argument(
        "--records-per-batch",
        type=at_least_one,
        default=Assumptions.records_per_batch,
        help="assumed SQS records per worker invocation (default 1, a quiet queue)",
    )
    cost.add_argument(
        "--scale",
        action="store_true",
        help="print what 10, 100 and 1,000 events a second take of each part instead (docs/scale.md)",
    )
    cost.add_argument(
        "--config",
        type=Path,
        default=ROOT / "lockgate.toml",
        help="price the model calls at this config's [provider] and [models] (default: this checkout's)",
    )
    cost.add_argument("--stage", default=None, help="merge stages/STAGE.toml over the config")
    cost.set_defaults(run=run)


def run_cost(args: Any, out: TextIO | None = None) -> int:
    """Measure, price and print."""
    import logging
    import sys

    from lockgate.config import load_config

    prices, priced = priced_as(load_config(args.config, args.stage))  # refused before measuring
    logging.disable(logging.CRITICAL)  # the functions log every step; the table is the output
    print(f"measuring {args.sample} example events on an embedded stack…", file=sys.stderr)
    try:
        usage = measure(args.sample)
    finally:
        logging.disable(logging.NOTSET)
    # The example traffic was priced at the checkout's config; its dollars, at the deployment's.
    usage.model_usd = model_usd(usage.by_model, prices, priced_as(load_config(ROOT / "lockgate.toml"))[0])
    assume = Assumptions(
        call_ms=args.call_ms, model_seconds=args.model_seconds, records_per_batch=args.records_per_batch
    )
    if args.scale:
        print(render_scale(usage, bill(usage, assume), assume), file=out or sys.stdout)
        return 0
    months = args.events or [1_000, 100_000, 1_000_000]
    render(usage, bill(usage, assume), months, assume, out or sys.stdout, priced)
    return 0
