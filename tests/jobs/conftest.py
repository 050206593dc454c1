"""Running jobs in tests: a JobContext on the test clock (built-in jobs), and the runner on moto."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from lockgate.clock import FixedClock
from lockgate.jobs.contract import Job, JobContext, JobResources
from lockgate.jobs.registry import CatchUp, JobSpec, Overlap
from lockgate.jobs.runner import JobRunner
from lockgate.jobs.state import JobState, JobStateStore
from lockgate.telemetry import CountingMetrics
from tests.support import LOG, Aws, make_config

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


class Rig:
    """A runner over moto's State table, with the clock and metrics the tests look at."""

    def __init__(self, aws: Aws, clock: FixedClock) -> None:
        self.aws = aws
        self.clock = clock
        self.metrics = CountingMetrics()
        self.store = JobStateStore(aws.client("dynamodb"), aws.state_table)
        self.config = make_config()

    def resources(self) -> JobResources:
        names = {"INBOX_TABLE": self.aws.inbox_table, "INBOX_QUEUE_URL": self.aws.queue_url}
        return JobResources(self.config, self.aws.client, names, self.clock, LOG, self.metrics)

    def runner(self, jobs: Mapping[str, JobSpec], timeout_seconds: int = 300) -> JobRunner:
        return JobRunner(
            jobs=jobs,
            store=self.store,
            resources=self.resources(),
            timeout_seconds=timeout_seconds,
            clock=self.clock,
            log=LOG,
            metrics=self.metrics,
        )

    def state(self, name: str) -> JobState:
        return next((s for s in self.store.all() if s.name == name), JobState(name))


def spec(
    name: str,
    job: Callable[[JobResources], Job],
    schedule: str = "rate(5 minutes)",
    *,
    overlap: Overlap = Overlap.SKIP,
    catch_up: CatchUp = CatchUp.ONCE,
) -> JobSpec:
    """A test job's registry entry."""
    return JobSpec(name, schedule, job, "a test job", overlap=overlap, catch_up=catch_up)


@pytest.fixture
def rig(aws: Aws, clock: FixedClock) -> Rig:
    return Rig(aws, clock)
