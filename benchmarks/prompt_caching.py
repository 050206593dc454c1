"""Model dollars per example run: prompt caching as shipped vs no caching and vs the old markers.

The shop's support-inbox task answers the example emails through the real loop, the real SDK and
the local stub, which bills prompt-cache writes and reads as the API does (prefixes hashed as
sent, each model's minimum cacheable length, a 20-block lookback). Four placements, each run in a
fresh stack in this process:

- without caching: no markers (``cache_ttl="off"``);
- today's markers (the baseline): the system prompt and the last tool, as Lockgate placed them
  before incremental caching (reproduced by moving the markers on the way to the SDK);
- incremental, 5 minutes: the system prompt and the newest message of each step, all 5-minute;
- incremental + last tool: the same plus a last-tool marker, to show whether that marker pays;
- as shipped: the task's own ``cache_ttl="auto"``: the system prompt's lifetime chosen from the gaps
  the worker sees between runs (the hour where runs are minutes apart), the conversation's 5 minutes.

Each placement runs warm (runs back to back, 10 s apart) and cold (runs 6 minutes apart: the
clock is advanced, so every 5-minute entry has expired; nothing sleeps). Then a sweep of mean gaps
between events, drawn at random (exponential, seeded: events arrive as a Poisson process), prices
the 5-minute, the one-hour and the shipped choice at each: where the hour stops paying. Dollars
price each call at its own model's rates and each cache write at its own lifetime's. "Billed
input" is the input side of the bill: uncached input + cache writes + cache reads, in dollars.
Exits 1 when a target is missed. Run: `python -m benchmarks.prompt_caching` (``make bench`` runs it
with the rest).
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from lockgate.clock import FixedClock
from lockgate.model.client import Usage
from lockgate.model.price_table import PriceTable
from lockgate_infra.evals.shoprig import Email, shop_rig
from lockgate_infra.workflow_path import first_on_path

ROOT = Path(__file__).resolve().parent.parent

EMAILS = [
    Email("ada@example.com", "Where is my order A-1042?", "Hi, where is order A-1042? It has been a week."),
    Email("grace@example.com", "Broken teapot A-2001", "My order A-2001 arrived broken. Please refund it."),
    Email("ada@example.com", "Returns", "How do I return the jacket from order A-1043?"),
    Email("grace@example.com", "Order A-2002", "When will A-2002 ship?"),
]
GAPS = {"warm": 10.0, "cold": 360.0}  # seconds between runs
SWEEP = (240.0, 600.0, 1800.0, 3600.0, 7200.0, 14400.0)  # mean seconds between random events
TARGETS = {"warm": 0.37, "cold": 0.40, "billed_input": 0.70}
Params = dict[str, Any]


def _strip_messages(params: Params) -> Params:
    messages = [
        {**m, "content": [{k: v for k, v in b.items() if k != "cache_control"} for b in m["content"]]}
        for m in params["messages"]
    ]
    return {**params, "messages": messages}


def _mark_last_tool(params: Params) -> Params:
    control = params["system"][0].get("cache_control")
    if not params.get("tools") or control is None:
        return params
    return {**params, "tools": [*params["tools"][:-1], {**params["tools"][-1], "cache_control": control}]}


# Placement → (the task's cache_ttl, None: its own; how the request is rewritten on the way out).
PLACEMENTS: dict[str, tuple[str | None, Callable[[Params], Params]]] = {
    "without caching": ("off", lambda p: p),
    "today (system + last tool)": ("5m", lambda p: _mark_last_tool(_strip_messages(p))),
    "incremental, 5 minutes": ("5m", lambda p: p),
    "incremental + last tool": ("5m", _mark_last_tool),
    "as shipped (auto)": (None, lambda p: p),
}
BASELINE, TODAY, FIVE, WITH_TOOL, NEW = PLACEMENTS
HOUR = "incremental, 1 hour"  # the sweep's third choice: the system prompt always an hour
SWEPT = {FIVE: PLACEMENTS[FIVE], HOUR: ("1h", lambda p: p), NEW: PLACEMENTS[NEW]}


class _Recorder:
    """The SDK client, with each create's params rewritten first and each reply's usage kept."""

    def __init__(self, sdk: Any, rewrite: Callable[[Params], Params], calls: list[tuple[str, Usage]]) -> None:
        self._sdk, self._rewrite, self._calls = sdk, rewrite, calls

    def with_options(self, **options: Any) -> _Recorder:
        return _Recorder(self._sdk.with_options(**options), self._rewrite, self._calls)

    @property
    def messages(self) -> _Recorder:
        return self

    def create(self, **params: Any) -> Any:
        reply = self._sdk.messages.create(**self._rewrite(params))
        u = reply.usage
        split = u.cache_creation
        usage = Usage(
            u.input_tokens,
            u.output_tokens,
            u.cache_creation_input_tokens or 0,
            u.cache_read_input_tokens or 0,
            cache_creation_5m_input_tokens=(split.ephemeral_5m_input_tokens or 0) if split else 0,
        )
        self._calls.append((str(reply.model), usage))
        return reply


@dataclass(frozen=True)
class Row:
    """What one placement cost over every run of one timing."""

    runs: int
    input_tokens: int
    cache_write: int
    cache_read: int
    output_tokens: int
    usd: float
    input_usd: float  # the input side: uncached input + cache writes + cache reads


def measure(placement: str, timing: str, rounds: int) -> Row:
    """Answer every example email ``rounds`` times with this placement and gap between runs."""
    return _measure(PLACEMENTS[placement], lambda: GAPS[timing], rounds)


def measure_random(choice: str, mean_gap: float, rounds: int, seed: int = 7) -> Row:
    """The same with exponential gaps of this mean between runs (one seed: every choice sees the same)."""
    draw = random.Random(seed)
    return _measure(SWEPT[choice], lambda: draw.expovariate(1 / mean_gap), rounds)


def _measure(
    placement: tuple[str | None, Callable[[Params], Params]], gap: Callable[[], float], rounds: int
) -> Row:
    from shop.model import scripted_model

    shop_model = scripted_model()

    ttl, rewrite = placement
    calls: list[tuple[str, Usage]] = []
    clock = FixedClock()
    with shop_rig(shop_model, cache_ttl=ttl, clock=clock, sdk=lambda c: _Recorder(c, rewrite, calls)) as rig:
        for r in range(rounds):
            for n, email in enumerate(EMAILS):
                rig.answer(email, f"msg-bench-{r}-{n}")
                clock.advance(gap())
    prices = PriceTable.published()
    # Each write at its own lifetime's price: the stub's replies split them, as the API's do.
    usd = sum(prices.cost_usd(model, usage, "1h" if ttl in (None, "1h") else "5m") for model, usage in calls)
    output_usd = sum(usage.output_tokens * prices.price(model).output for model, usage in calls) / 1e6
    return Row(
        runs=rounds * len(EMAILS),
        input_tokens=sum(u.input_tokens for _, u in calls),
        cache_write=sum(u.cache_creation_input_tokens for _, u in calls),
        cache_read=sum(u.cache_read_input_tokens for _, u in calls),
        output_tokens=sum(u.output_tokens for _, u in calls),
        usd=round(usd, 6),
        input_usd=round(usd - output_usd, 6),
    )


def figures(rows: dict[str, dict[str, Row]]) -> dict[str, float]:
    """The ratios the targets are about, each against a baseline measured in this run."""
    found = {}
    for timing in GAPS:
        at = rows[timing]
        found[f"{timing}_vs_uncached"] = at[NEW].usd / at[BASELINE].usd
        found[f"{timing}_today_vs_uncached"] = at[TODAY].usd / at[BASELINE].usd
        found[f"{timing}_billed_input_vs_today"] = at[NEW].input_usd / at[TODAY].input_usd
        found[f"{timing}_last_tool_marker"] = at[WITH_TOOL].usd / at[FIVE].usd
        found[f"{timing}_five_minutes_vs_uncached"] = at[FIVE].usd / at[BASELINE].usd
    return found


def sweep(rounds: int) -> dict[str, dict[str, float]]:
    """Per mean gap between random events: each choice's dollars × uncached (as many runs, any gap)."""
    uncached = _measure(PLACEMENTS[BASELINE], lambda: GAPS["warm"], rounds).usd
    return {
        f"{gap:.0f}": {choice: measure_random(choice, gap, rounds).usd / uncached for choice in SWEPT}
        for gap in SWEEP
    }


def report_sweep(found: dict[str, dict[str, float]]) -> None:
    """The sweep's table: where the hour pays and where five minutes does."""
    print("\nrandom events (exponential gaps), model dollars × uncached, by mean gap:")
    print(f"{'mean gap':>10}" + "".join(f"{choice:>24}" for choice in SWEPT))
    for gap, by in found.items():
        cheaper = "1 hour" if by[HOUR] < by[FIVE] else "5 minutes"
        cells = "".join(f"{by[choice]:>24.3f}" for choice in SWEPT)
        print(f"{float(gap) / 60:>8.0f} m{cells}   cheaper: {cheaper}")


HEADER = f"{'':<31}{'input':>8}{'cache write':>13}{'cache read':>12}{'output':>8}{'dollars':>10}"


def _table(rows: dict[str, Row]) -> None:
    print(f"{HEADER}{'× uncached':>12}")
    for label, row in rows.items():
        print(
            f"{label:<31}{row.input_tokens:>8}{row.cache_write:>13}{row.cache_read:>12}"
            f"{row.output_tokens:>8}{row.usd:>10.4f}{row.usd / rows[BASELINE].usd:>12.3f}"
        )


def report(rows: dict[str, dict[str, Row]], found: dict[str, float], rounds: int) -> bool:
    """Print the tables and the targets; True when every target is met."""
    runs = rows["warm"][NEW].runs
    print(f"Support-inbox runs: {runs} ({len(EMAILS)} emails x {rounds})")
    print("Each call priced at its own model's rates (the intake's extraction runs on a smaller model).")
    for timing, gap in GAPS.items():
        print(f"\n{timing}: runs {gap:.0f} s apart")
        _table(rows[timing])
    checks = [
        ("model dollars, as shipped / uncached, warm", found["warm_vs_uncached"], TARGETS["warm"]),
        ("model dollars, as shipped / uncached, cold", found["cold_vs_uncached"], TARGETS["cold"]),
        (
            "billed input, as shipped / today's, warm",
            found["warm_billed_input_vs_today"],
            TARGETS["billed_input"],
        ),
        (
            "billed input, as shipped / today's, cold",
            found["cold_billed_input_vs_today"],
            TARGETS["billed_input"],
        ),
    ]
    print()
    for label, value, target in checks:
        print(f"{label}: {value:.3f} (target ≤ {target:.2f}): {'met' if value <= target else 'NOT MET'}")
    print(
        f"today's markers / uncached: {found['warm_today_vs_uncached']:.3f} warm, "
        f"{found['cold_today_vs_uncached']:.3f} cold"
    )
    print(
        f"adding a last-tool marker: × {found['warm_last_tool_marker']:.3f} warm, "
        f"× {found['cold_last_tool_marker']:.3f} cold (1.000: it buys nothing)"
    )
    uncached = {label: row.input_tokens / row.runs for label, row in rows["warm"].items()}
    print(
        f"uncached input tokens per run (warm): {uncached[NEW]:.0f} incremental, "
        f"{uncached[TODAY]:.0f} today's, {uncached[BASELINE]:.0f} without caching"
    )
    print(
        f"incremental with 5 minutes only / uncached: {found['warm_five_minutes_vs_uncached']:.3f} warm, "
        f"{found['cold_five_minutes_vs_uncached']:.3f} cold"
    )
    return all(value <= target for _, value, target in checks)


def main(argv: list[str] | None = None) -> int:
    """Measure every placement warm and cold; print the comparison (--json: machine-readable)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=2, help="times to answer the example emails")
    parser.add_argument(
        "--sweep-rounds", type=int, default=5, help="...at each mean gap of the sweep (0: none)"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    # The checkout's workflows/ (the shop, triage) importable, as `lockgate` and `make bench` have them.
    with first_on_path(ROOT / "workflows"):
        rows = {timing: {p: measure(p, timing, args.rounds) for p in PLACEMENTS} for timing in GAPS}
        swept = sweep(args.sweep_rounds) if args.sweep_rounds else {}
    found = figures(rows)
    if args.json:
        data = {t: {p: asdict(r) for p, r in by.items()} for t, by in rows.items()}
        print(json.dumps({"rows": data, "ratios": found, "sweep": swept, "targets": TARGETS}, indent=2))
        return 0
    met = report(rows, found, args.rounds)
    if swept:
        report_sweep(swept)
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
