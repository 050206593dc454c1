"""Running a built-in job the way the runner does: a JobContext on the test clock."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lockgate.clock import FixedClock
from lockgate.jobs.contract import JobContext
from lockgate.telemetry import CountingMetrics
from tests.support import LOG

FAR = 10_000.0  # seconds of deadline: more than any test run needs


@dataclass(frozen=True)
class PagedContext(JobContext):
    """A context whose deadline arrives after ``pages`` pages (should_stop answers True from then on)."""

    pages: int = 1_000_000
    asked: list[int] = field(default_factory=list)

    def should_stop(self) -> bool:
        self.asked.append(1)
        return len(self.asked) > self.pages


def context(
    clock: FixedClock,
    metrics: CountingMetrics | None = None,
    cursor: Mapping[str, Any] | None = None,
    pages: int = 1_000_000,
    scheduled_time: str = "2026-01-01T06:00:00Z",
    name: str = "test-job",
) -> PagedContext:
    """A run of a job now, with the given cursor, stopping after ``pages`` pages."""
    return PagedContext(
        name=name,
        scheduled_time=scheduled_time,
        deadline=clock.now() + FAR,
        clock=clock,
        log=LOG,
        metrics=metrics or CountingMetrics(),
        cursor=cursor,
        pages=pages,
    )
