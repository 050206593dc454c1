"""Building a job runner on moto with test jobs."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

import pytest

from lockgate.clock import FixedClock
from lockgate.jobs.contract import Job
from lockgate.jobs.registry import CatchUp, JobResources, JobSpec, Overlap
from lockgate.jobs.runner import JobRunner
from lockgate.jobs.state import JobState, JobStateStore
from lockgate.telemetry import CountingMetrics
from tests.support import Aws, make_config

LOG = logging.getLogger("lockgate.tests.jobs")


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
