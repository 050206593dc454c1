"""The load benchmark's figures per phase and its report: the checks, the spread over repeats, the
ratios and the target."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from benchmarks.load_traffic import Request

HANDLER, CORE, BASELINE = "lockgate handler", "lockgate core", "baseline core"
RECEIVERS = (HANDLER, CORE, BASELINE)
# The claim the benchmark exists to test: Lockgate's receiver core (2 AWS calls per new delivery)
# takes load at least as fast as the common Powertools-idempotency receiver (4), median of the repeats.
TARGET_THROUGHPUT_RATIO = 1.00


@dataclass
class Phase:
    """One receiver's run over the traffic, in one repeat."""

    name: str
    repeat: int = 0
    seconds: float = 0.0
    statuses: dict[str, Counter[int]] = field(default_factory=dict)
    own_seconds: list[float] = field(default_factory=list)
    start: tuple[int, int, int] = (0, 0, 0)  # its queue's depth, Inbox and State items when it began
    checks: dict[str, bool] = field(default_factory=dict)  # Lockgate's phases only
    states: Counter[tuple[str, str | None]] = field(default_factory=Counter)  # (status, attempts) stored
    resent: Counter[str] = field(default_factory=Counter)  # the provider's resends, by reason
    swept: dict[str, int] = field(default_factory=dict)  # what the inbox sweep did after it (faults only)

    @property
    def per_second(self) -> float:
        return sum(sum(c.values()) for c in self.statuses.values()) / self.seconds

    def percentile_ms(self, q: float) -> float:
        ordered = sorted(self.own_seconds)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000

    @property
    def p50_ms(self) -> float:
        return self.percentile_ms(0.5)

    @property
    def p99_ms(self) -> float:
        return self.percentile_ms(0.99)


def check_phase(
    phase: Phase, requests: list[Request], rows: list[dict[str, Any]], drained: bool, prefix: str
) -> None:
    """Record on ``phase`` whether what its receiver stored, answered and the worker processed is right."""
    distinct = {r.delivery_id for r in requests if r.kind == "new"}
    stored = {row["pk"]["S"].removeprefix(prefix) for row in rows}
    phase.states = Counter((row["status"]["S"], row.get("attempts", {}).get("N")) for row in rows)
    phase.checks = {
        "stored = distinct valid deliveries": stored == distinct,
        "every new delivery answered 200": set(phase.statuses["new"]) == {200},
        "every duplicate answered 200": set(phase.statuses["duplicate"]) <= {200},
        "every forgery answered 401": set(phase.statuses["forged"]) == {401},
        "every stored delivery processed once": drained
        and phase.states == Counter({("done", "1"): len(distinct)}),
    }


def spread(values: Iterable[float], digits: int) -> str:
    """``median (min–max)`` of ``values``."""
    ordered = sorted(values)
    return f"{statistics.median(ordered):.{digits}f} ({ordered[0]:.{digits}f}–{ordered[-1]:.{digits}f})"


def paired(phases: list[Phase], ours: str, theirs: str, figure: Callable[[Phase], float]) -> list[float]:
    """``figure`` of ``ours`` ÷ that of ``theirs``, one ratio per repeat (both measured in it)."""
    by = {(p.repeat, p.name): p for p in phases}
    repeats = sorted({p.repeat for p in phases})
    return [figure(by[r, ours]) / figure(by[r, theirs]) for r in repeats]


def report(requests: list[Request], phases: list[Phase], out: Any, faults: Any = None) -> int:
    """Print the checks, the figures and the ratios with their spread; 0 when every check passed and
    the target is met."""
    counts = Counter(r.kind for r in requests)
    repeats = max(p.repeat for p in phases) + 1
    plural = "s" if repeats > 1 else ""
    print(f"Load: {repeats} repeat{plural} × {len(requests)} requests ({counts['new']} new, "
          f"{counts['duplicate']} duplicates, {counts['forged']} forged) from the senders, on loopback",
          file=out)  # fmt: skip
    for r in range(repeats):
        print(f"  repeat {r + 1}: " + " → ".join(p.name for p in phases if p.repeat == r), file=out)
    if faults is not None and faults.by_receiver and any(faults.by_receiver.values()):
        _print_faults(phases, faults, out)
    ok = _print_checks(phases, out)
    print(f"\nMedian over {repeats} repeats (min–max):\n\n"
          "| receiver | deliveries/s | p50 own ms | p99 own ms | duplicates answered (all repeats) |\n"
          "|---|---|---|---|---|", file=out)  # fmt: skip
    for name in RECEIVERS:
        mine = [p for p in phases if p.name == name]
        dups = sum((p.statuses["duplicate"] for p in mine), Counter[int]())
        print(f"| {name} | {spread((p.per_second for p in mine), 0)} | "
              f"{spread((p.p50_ms for p in mine), 2)} | {spread((p.p99_ms for p in mine), 2)} | "
              f"{', '.join(f'{s}×{n}' for s, n in sorted(dups.items()))} |", file=out)  # fmt: skip
    throughput = paired(phases, CORE, BASELINE, lambda p: p.per_second)
    print("\nRatios, each within one repeat, median (min–max):\n\n| ratio | value |\n|---|---|", file=out)
    for label, values in (
        ("lockgate core ÷ baseline core, deliveries/s", throughput),
        ("lockgate core ÷ baseline core, p50 own", paired(phases, CORE, BASELINE, lambda p: p.p50_ms)),
        ("lockgate core ÷ baseline core, p99 own", paired(phases, CORE, BASELINE, lambda p: p.p99_ms)),
        ("lockgate handler ÷ lockgate core, p50 own", paired(phases, HANDLER, CORE, lambda p: p.p50_ms)),
    ):
        print(f"| {label} | {spread(values, 2)} |", file=out)
    met = statistics.median(throughput) >= TARGET_THROUGHPUT_RATIO
    print(f"\nTarget: lockgate core ÷ baseline core deliveries/s, median ≥ {TARGET_THROUGHPUT_RATIO:.2f}: "
          f"{statistics.median(throughput):.2f} — {'met' if met else 'not met'}", file=out)  # fmt: skip
    return 0 if ok and met else 1


def _print_checks(phases: list[Phase], out: Any) -> bool:
    """Each check over every Lockgate phase, and that every phase began alike; True when all held."""
    ours = [p for p in phases if p.checks]
    starts = {p.start for p in phases}
    checks = {name: all(p.checks[name] for p in ours) for name in ours[0].checks}
    checks["every phase began with an empty queue and the same table sizes"] = (
        len(starts) == 1 and next(iter(starts))[0] == 0
    )
    depth, inbox, state = sorted(starts)[0]
    print(f"  each phase began with: queue depth {depth}, Inbox {inbox} items, State {state} items; "
          f"{len(ours)} Lockgate phases checked", file=out)  # fmt: skip
    for name, ok in checks.items():
        print(f"  {'ok  ' if ok else 'FAIL'} {name}", file=out)
    for p in ours:
        if not all(p.checks.values()):
            print(f"       repeat {p.repeat + 1} {p.name}: (status, attempts) {dict(p.states)}", file=out)
    if len(starts) > 1:
        print(f"       phase starts (queue depth, table items): {sorted(starts)}", file=out)
    return all(checks.values())


def _print_faults(phases: list[Phase], faults: Any, out: Any) -> None:
    """What was injected, what the provider resent and what the sweep re-queued, per receiver."""
    print(f"  {faults.rates.describe()}", file=out)
    for name in RECEIVERS:
        mine = [p for p in phases if p.name == name]
        resent = sum((p.resent for p in mine), Counter[str]())
        swept = sum((Counter(p.swept) for p in mine), Counter[str]())
        injected = faults.by_receiver.get(name, Counter())
        line = f"  {name}: injected {_counts(injected)}; provider resent {_counts(resent)}"
        print(line + (f"; inbox sweep {_counts(swept)}" if swept else ""), file=out)


def _counts(counts: Counter[str]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "none"
