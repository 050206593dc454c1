"""The watchdog's view of every job: last success, heartbeat age, lease, cursor, and whether it is overdue.

``lockgate jobs status`` prints it; the scheduled_jobs function publishes each job's heartbeat
age after every invocation, and a CloudWatch alarm per schedule fires when a job's age passes
its ``overdue_after`` (or when nothing is published at all: silence is an alarm too).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lockgate.jobs.registry import JobSpec
from lockgate.jobs.schedule import iso
from lockgate.jobs.state import JobState, JobStateStore


@dataclass(frozen=True)
class JobHealth:
    """One job's heartbeat, judged against its schedule."""

    name: str
    schedule: str
    overdue_after: int
    last_success_at: float | None
    age_seconds: float | None
    lease_held_until: float | None
    cursor: Mapping[str, Any] | None
    queued_time: str | None
    last_error: str | None

    @property
    def overdue(self) -> bool:
        """No success within ``overdue_after`` (a job that never ran has no age, so is not overdue)."""
        return self.age_seconds is not None and self.age_seconds > self.overdue_after

    def as_dict(self) -> dict[str, Any]:
        """For ``--json`` output."""
        return {
            "job": self.name,
            "schedule": self.schedule,
            "last_success": iso(self.last_success_at) if self.last_success_at else None,
            "age_seconds": None if self.age_seconds is None else int(self.age_seconds),
            "overdue_after_seconds": self.overdue_after,
            "overdue": self.overdue,
            "lease_until": iso(self.lease_held_until) if self.lease_held_until else None,
            "cursor": dict(self.cursor) if self.cursor else None,
            "queued": self.queued_time,
            "last_error": self.last_error,
        }


def job_health(jobs: Mapping[str, JobSpec], store: JobStateStore, now: float) -> list[JobHealth]:
    """Every registered job's health, in registry order (one query)."""
    states = {state.name: state for state in store.all()}
    return [_health(spec, states.get(spec.name, JobState(spec.name)), now) for spec in jobs.values()]


def _health(spec: JobSpec, state: JobState, now: float) -> JobHealth:
    return JobHealth(
        name=spec.name,
        schedule=spec.schedule,
        overdue_after=spec.overdue_after(),
        last_success_at=state.last_success_at,
        age_seconds=None if state.last_success_at is None else max(0.0, now - state.last_success_at),
        lease_held_until=state.lease_expires_at if state.leased(now) else None,
        cursor=state.cursor,
        queued_time=state.queued_time,
        last_error=state.last_error if (state.last_failure_at or 0) > (state.last_success_at or 0) else None,
    )
