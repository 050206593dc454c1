"""The latency benchmark's phases, their checks (nothing lost, nothing doubled) and its report."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from benchmarks.latency_model import ModelledAws, describe
from benchmarks.latency_traffic import Sent


@dataclass(frozen=True)
class Deployed:
    """The worker's event source and concurrency as ``template.yaml`` deploys them."""

    batch_size: int
    batching_window: float
    maximum_concurrency: int | None
    record_concurrency: str
    timeout: int

    @classmethod
    def from_plan(cls, plan: Any, worker: str) -> Deployed:
        """Read from the local stack's plan of the template."""
        source = next(s for s in plan.sqs_sources if s.function == worker)
        function = plan.functions[worker]
        return cls(
            source.batch_size,
            source.maximum_batching_window,
            source.maximum_concurrency,
            function.environment.get("WORKER_RECORD_CONCURRENCY", "1"),
            function.timeout,
        )


def percentile(values: list[float], q: float) -> float:
    """The nearest-rank ``q`` percentile (0–1) of ``values``; 0 when there are none."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


@dataclass
class Result:
    """One phase: what was sent, what came back, and its checks."""

    label: str
    rate: float
    seconds: float
    tags: list[str]
    sent: Sent
    drained: bool
    cpu_seconds: float = 0.0
    wall_seconds: float = 0.0
    replies: dict[str, float] = field(default_factory=dict)  # tag → seconds from receipt to reply sent
    checks: dict[str, bool] = field(default_factory=dict)
    swept: int = 0  # deliveries the inbox sweep re-queued after the phase
    states: Counter[tuple[str, str]] = field(default_factory=Counter)

    def check(self, rows: list[dict[str, Any]], replies: dict[str, list[float]]) -> None:
        """Record whether every email was answered 200, stored once, done, and replied to exactly once."""
        tags = set(self.tags)
        stored = [row["pk"]["S"].removeprefix("helpdesk#") for row in rows]
        self.states = Counter((row["status"]["S"], row.get("attempts", {}).get("N", "?")) for row in rows)
        sends = {tag: replies.get(tag, []) for tag in tags}
        self.replies = {tag: times[0] - self.sent.due[tag] for tag, times in sends.items() if times}
        self.checks = {
            "every email answered 200": set(self.sent.acked) == tags and not self.sent.refused,
            "stored once each": sorted(stored) == sorted(tags),
            "every delivery done": self.drained and all(status == "done" for status, _ in self.states),
            "replied to exactly once (none lost)": all(len(times) >= 1 for times in sends.values()),
            "replied to exactly once (none doubled)": all(len(times) <= 1 for times in sends.values()),
        }

    @property
    def ok(self) -> bool:
        """Every check held."""
        return all(self.checks.values())

    def row(self) -> str:
        """This phase's line of the table."""
        ack = [self.sent.acked[t] - self.sent.due[t] for t in self.sent.acked]
        reply = list(self.replies.values())
        cpu = self.cpu_seconds / self.wall_seconds if self.wall_seconds else 0.0
        return (
            f"| {self.label} | {len(self.tags)} | {len(self.replies)} | "
            f"{percentile(ack, 0.5) * 1000:.0f} / {percentile(ack, 0.99) * 1000:.0f} | "
            f"{percentile(reply, 0.5):.1f} | {percentile(reply, 0.95):.1f} | {percentile(reply, 0.99):.1f} | "
            f"{max(reply, default=0.0):.1f} | {self.sent.most_late * 1000:.0f} | "
            f"{self.cpu_seconds / max(1, len(self.tags)):.2f} | {cpu:.2f} | {'ok' if self.ok else 'FAIL'} |"
        )


def report(results: list[Result], deployed: Deployed, aws: ModelledAws, out: Any) -> int:
    """Print the set-up, the modelled latencies, the table and the checks; 0 when every check held."""
    print("Latency: webhook receipt → reply sent (the shop's SES SendEmail returned), embedded stack, "
          "modelled AWS and model latency", file=out)  # fmt: skip
    print(f"\nAs deployed (template.yaml): worker event source BatchSize {deployed.batch_size}, "
          f"MaximumBatchingWindowInSeconds {deployed.batching_window:g}, ScalingConfig MaximumConcurrency "
          f"{deployed.maximum_concurrency}, WORKER_RECORD_CONCURRENCY {deployed.record_concurrency}, "
          f"Timeout {deployed.timeout} s; the receiver has no reserved concurrency (uncapped here).",
          file=out)  # fmt: skip
    if deployed.maximum_concurrency:
        print(f"At most {deployed.maximum_concurrency * deployed.batch_size} records in flight "
              "(MaximumConcurrency × BatchSize); an invocation lasts as long as its batch's slowest record.",
              file=out)  # fmt: skip
    print("\nModelled latency per call (log-normal, median and p99):", file=out)
    for line in describe():
        print(line, file=out)
    print(f"  {aws.calls} AWS calls waited {aws.waited:.0f} s in all.", file=out)
    if aws.scale != 1:
        print(f"  Every modelled delay × {aws.scale:g}: a smoke run, not the figures.", file=out)
    print("\n| phase | emails | replies | 200 after ms (p50 / p99) | reply p50 s | p95 s | p99 s | max s "
          "| sender late ms (max) | CPU s / email | process CPU / wall | checks |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|---|", file=out)  # fmt: skip
    for result in results:
        print(result.row(), file=out)
    failed = [r for r in results if not r.ok]
    print("\nChecks per phase: every email answered 200, stored once, done, replied to exactly once "
          f"— {'all held' if not failed else 'FAILED'}", file=out)  # fmt: skip
    for result in failed:
        broken = [name for name, held in result.checks.items() if not held]
        print(f"  {result.label}: {', '.join(broken)}; (status, attempts) {dict(result.states)}; "
              f"never 200: {dict(Counter(result.sent.refused.values()))}", file=out)  # fmt: skip
    for result in results:
        resent = ", ".join(f"{n} after {s or 'no answer'}" for s, n in sorted(result.sent.resent.items()))
        if resent or result.swept:
            print(f"  {result.label}: the provider resent {resent or 'nothing'}; the inbox sweep re-queued "
                  f"{result.swept} stored without a pointer (their replies wait for the sweep's "
                  "schedule when deployed, here it ran right after the phase)", file=out)  # fmt: skip
    return 1 if failed else 0
