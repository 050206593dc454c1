"""The load benchmark's figures per receiver and its report: the checks, the table and the ratios."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from benchmarks.load_traffic import Request


@dataclass
class Phase:
    """One receiver's run over the traffic."""

    name: str
    seconds: float = 0.0
    statuses: dict[str, Counter[int]] = field(default_factory=dict)
    own_seconds: list[float] = field(default_factory=list)

    @property
    def per_second(self) -> float:
        return sum(sum(c.values()) for c in self.statuses.values()) / self.seconds

    def percentile_ms(self, q: float) -> float:
        ordered = sorted(self.own_seconds)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def report(
    requests: list[Request], phases: list[Phase], rows: list[dict[str, Any]], drained: bool, out: Any
) -> int:
    """Print the checks and the ratios; 0 when every check passed."""
    ours, core, base = phases
    distinct = {f"p0-{r.delivery_id}" for r in requests if r.kind == "new"}
    stored = {row["pk"]["S"].removeprefix("github#") for row in rows}
    once = [row for row in rows if row["status"]["S"] == "done" and row.get("attempts", {}).get("N") == "1"]
    checks = {
        "stored = distinct valid deliveries": stored == distinct,
        "every new delivery answered 200": set(ours.statuses["new"]) == {200},
        "every duplicate answered 200": set(ours.statuses["duplicate"]) <= {200},
        "every forgery answered 401": set(ours.statuses["forged"]) == {401},
        "every stored delivery processed once": drained and len(once) == len(distinct),
    }
    counts = Counter(r.kind for r in requests)
    print(f"Load: {len(requests)} requests ({counts['new']} new, {counts['duplicate']} duplicates, "
          f"{counts['forged']} forged) from the senders, on loopback", file=out)  # fmt: skip
    for name, ok in checks.items():
        print(f"  {'ok  ' if ok else 'FAIL'} {name}", file=out)
    if not checks["every stored delivery processed once"]:
        states = Counter((row["status"]["S"], row.get("attempts", {}).get("N")) for row in rows)
        print(f"       queue drained: {drained}; (status, attempts): {dict(states)}", file=out)
    print(
        "\n| receiver | deliveries/s | p50 own ms | p99 own ms | duplicates answered |\n"
        "|---|---|---|---|---|",
        file=out,
    )
    for phase in phases:
        dups = ", ".join(f"{status}×{n}" for status, n in sorted(phase.statuses["duplicate"].items()))
        print(f"| {phase.name} | {phase.per_second:.0f} | {phase.percentile_ms(0.5):.2f} | "
              f"{phase.percentile_ms(0.99):.2f} | {dups} |", file=out)  # fmt: skip
    print(f"\nRatios, lockgate core ÷ baseline core: deliveries/s {core.per_second / base.per_second:.2f}, "
          f"p50 {core.percentile_ms(0.5) / base.percentile_ms(0.5):.2f}, "
          f"p99 {core.percentile_ms(0.99) / base.percentile_ms(0.99):.2f}", file=out)  # fmt: skip
    decorators = ours.percentile_ms(0.5) / core.percentile_ms(0.5)
    print(f"The full handler (Powertools logger + metrics) takes {decorators:.2f}× the core's p50", file=out)
    return 0 if all(checks.values()) else 1
