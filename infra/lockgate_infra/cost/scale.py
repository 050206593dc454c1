"""``lockgate cost --scale``: what each part of a deployment carries at 10, 100 and 1,000 events a second.

Every figure is the measured usage per example event (``cost/meter.py``) times the rate: calls,
capacity units, the busiest DynamoDB keys (``cost/hotkeys.py``), model calls and tokens, and the
month's dollars (``cost/bill.py``). The work in flight is Little's law: the rate times how long
the worker holds one event, which is mostly the model's time (assumed, as ``lockgate cost``
assumes it). AWS's own limits to compare them with are in docs/scale.md, each with its source.
"""

from __future__ import annotations

from collections import Counter

from lockgate_infra.cost.bill import Assumptions, Bill
from lockgate_infra.cost.hotkeys import PARTITION_WRITE_UNITS, KeyLoad, is_index
from lockgate_infra.cost.meter import Usage

RATES = (10, 100, 1_000)  # events a second
SECONDS_PER_MONTH = 30 * 86_400


def busiest(load: KeyLoad, events: int, *, index: bool) -> tuple[str, float]:
    """The busiest shared item key (or index partition) and its write units per event."""
    shared = load.per_partition(load.shared(load.writes))
    keys = Counter({k: n for k, n in shared.items() if is_index(k) == index})
    found = keys.most_common(1)
    return (found[0][0], found[0][1] / events) if found else ("none", 0.0)


def _dollars(value: float) -> str:
    """Two significant figures: the month's dollars move a little with the measured compute time."""
    rounded = float(f"{value:.2g}")
    return f"${rounded:,.0f}" if rounded >= 10 else f"${rounded:,.1f}"


def scale_rows(usage: Usage, result: Bill, assume: Assumptions) -> list[tuple[str, list[str]]]:
    """Each row of the table: what it is, and its value at each of ``RATES``."""
    e = usage.per_event
    worker = usage.functions["worker"]
    held = e(usage.model_calls) * assume.model_seconds + e(worker.aws_calls) * assume.call_ms / 1000
    item, item_units = busiest(usage.keys, usage.events, index=False)
    index, index_units = busiest(usage.keys, usage.events, index=True)
    tokens_in = sum(e(usage.model_tokens[k]) for k in ("input_tokens", "cache_creation_input_tokens"))
    per_second: list[tuple[str, float, str]] = [
        (f"worker events in flight ({held:.1f} s each)", held, "{:,.0f}"),
        (
            f"worker invocations in flight ({worker.concurrency} events each)",
            held / worker.concurrency,
            "{:,.0f}",
        ),
        ("HTTP requests to the receiver a second", e(usage.posts), "{:,.0f}"),
        ("SQS requests a second", e(usage.sqs_requests), "{:,.0f}"),
        (
            "DynamoDB write units a second (tables and indexes)",
            e(usage.write_units + usage.index_write_units),
            "{:,.0f}",
        ),
        ("DynamoDB read units a second", e(usage.read_units), "{:,.0f}"),
        (
            f"busiest item key, write units a second (of {PARTITION_WRITE_UNITS:,}): {item}",
            item_units,
            "{:,.0f}",
        ),
        (
            f"busiest index partition, write units a second (of {PARTITION_WRITE_UNITS:,}): {index}",
            index_units,
            "{:,.0f}",
        ),
        ("model requests a minute", 60 * e(usage.model_calls), "{:,.0f}"),
        ("model input tokens a minute (uncached and cache writes)", 60 * tokens_in, "{:,.0f}"),
        ("model output tokens a minute", 60 * e(usage.model_tokens["output_tokens"]), "{:,.0f}"),
    ]
    rows = [(name, [fmt.format(value * rate) for rate in RATES]) for name, value, fmt in per_second]
    month = [rate * SECONDS_PER_MONTH for rate in RATES]
    rows.append(("AWS dollars a month (30 days)", [_dollars(result.total(n)) for n in month]))
    rows.append(
        ("model dollars a month (apart from AWS)", [_dollars(result.model_per_event * n) for n in month])
    )
    return rows


def render_scale(usage: Usage, result: Bill, assume: Assumptions) -> str:
    """The table ``lockgate cost --scale`` prints (Markdown)."""
    lines = [
        f"At a steady rate, from {usage.events} example events measured (assumed: {assume.model_seconds:g} s "
        f"per model call, {assume.call_ms:g} ms per AWS call):",
        "",
        "| | " + " | ".join(f"{rate:,} events/s" for rate in RATES) + " |",
        "|---|" + "---|" * len(RATES),
    ]
    lines += [f"| {name} | " + " | ".join(cells) + " |" for name, cells in scale_rows(usage, result, assume)]
    return "\n".join(lines)
