"""What a job is: a callable that does one page of work before its deadline and says where it got to.

The runner (lease, heartbeat, cursor storage) calls a job with a ``JobContext``; the job returns a
``JobResult``. A job that stops early because time is short returns ``done=False`` with a cursor,
and the next run receives that cursor back, so nothing is redone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from lockgate.clock import Clock
from lockgate.config import LockgateConfig
from lockgate.errors import ConfigError, LockgateError
from lockgate.telemetry import Log, Metrics

# Stop starting new pages when fewer than this many seconds remain before the deadline.
PAGE_MARGIN_SECONDS = 10.0


@dataclass(frozen=True)
class JobContext:
    """One run of one job."""

    name: str
    scheduled_time: str  # this occurrence, ISO 8601 UTC (from Scheduler, or now for a manual run)
    deadline: float  # epoch seconds; finish and return before this
    clock: Clock
    log: Log
    metrics: Metrics
    cursor: Mapping[str, Any] | None = None  # saved by the previous run that stopped early

    def time_left(self) -> float:
        """Seconds until the deadline."""
        return self.deadline - self.clock.now()

    def should_stop(self) -> bool:
        """True when there is no time for another page."""
        return self.time_left() < PAGE_MARGIN_SECONDS


@dataclass(frozen=True)
class JobResult:
    """What a run did: finished, or stopped with a cursor to resume from."""

    done: bool = True
    cursor: Mapping[str, Any] | None = None
    counts: Mapping[str, int] = field(default_factory=dict)  # logged and kept with the heartbeat


Job = Callable[[JobContext], JobResult]


class JobNotWired(LockgateError):
    """A registered job whose code is not installed in this deployment."""


@dataclass(frozen=True)
class JobResources:
    """What factories build jobs from: injected clients, resource names, settings, clock, logs, metrics."""

    config: LockgateConfig
    client: Callable[[str], Any]  # boto3 client factory: resources.client("dynamodb")
    names: Mapping[str, str]  # INBOX_TABLE, STATE_TABLE, INBOX_QUEUE_URL, ... (the function's environment)
    clock: Clock
    log: Log
    metrics: Metrics
    environ: Mapping[str, str] = field(default_factory=dict)  # the whole environment, for the workflows

    def name(self, variable: str) -> str:
        """A resource name from the environment; ConfigError if this function was not given it."""
        value = self.names.get(variable, "").strip()
        if not value:
            raise ConfigError(f"environment variable {variable} is required by this job")
        return value


Factory = Callable[[JobResources], Job]
