"""Running one job safely: a lease per job name, a deadline, a saved cursor, a heartbeat, catch-up.

A failed run re-raises after logging its traceback and noting the failure, so Scheduler's retry
policy, its dead-letter queue and the function's Errors metric all see it.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from lockgate.clock import Clock
from lockgate.errors import ConfigError
from lockgate.jobs.contract import JobContext, JobResources, JobResult
from lockgate.jobs.registry import CatchUp, JobSpec, Overlap
from lockgate.jobs.schedule import ScheduleExpression, iso, parse_iso
from lockgate.jobs.state import JobState, JobStateStore
from lockgate.telemetry import Log, Metrics

LEASE_MARGIN_SECONDS = 60  # the lease outlives the invocation: a slow finish is never overtaken
DEADLINE_MARGIN_SECONDS = 5  # leave time to save the cursor and release the lease
MAX_CATCH_UP = 48  # occurrences run in one invocation at most; the rest wait for the next


@dataclass(frozen=True)
class RunOutcome:
    """What one invocation did."""

    job: str
    status: str  # "done", "stopped" (deadline; cursor saved), "skipped", "queued"
    runs: int = 0
    missed: int = 0
    counts: Mapping[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, object]:
        """For the handler's response and the CLI."""
        return {
            "job": self.job,
            "status": self.status,
            "runs": self.runs,
            "missed": self.missed,
            "counts": dict(self.counts),
        }


class JobRunner:
    """Runs registered jobs under their lease; one runner per function (the composition root builds it)."""

    def __init__(
        self,
        *,
        jobs: Mapping[str, JobSpec],
        store: JobStateStore,
        resources: JobResources,
        timeout_seconds: int,
        clock: Clock,
        log: Log,
        metrics: Metrics,
    ) -> None:
        self._jobs = jobs
        self._store = store
        self._resources = resources
        self._lease_seconds = timeout_seconds + LEASE_MARGIN_SECONDS
        self._clock = clock
        self._log = log
        self._metrics = metrics

    def run(
        self, name: str, scheduled_time: str | None, remaining_seconds: Callable[[], float]
    ) -> RunOutcome:
        """One invocation: take the lease or step aside, run what is due, record the heartbeat."""
        spec = self._jobs.get(name)
        if spec is None:
            raise ConfigError(f"no job called {name!r} (known: {', '.join(sorted(self._jobs))})")
        now = self._clock.now()
        moment = iso(parse_iso(scheduled_time) if scheduled_time else now)
        deadline = now + remaining_seconds() - DEADLINE_MARGIN_SECONDS
        owner = uuid.uuid4().hex
        acquired = self._store.acquire(name, owner, moment, now, now + self._lease_seconds)
        if not acquired.taken:
            return self._step_aside(spec, acquired.state, moment, now)
        state = acquired.state
        outcome = self._run_due(spec, state, moment, owner, deadline)
        # A run queued while this one held the lease: run it now if there is time, else leave it
        # queued for the next invocation (which takes it with the lease, below).
        while outcome.status == "done" and self._clock.now() < deadline - 60:
            queued = self._store.release(name, owner, take_queued=True)
            if queued is None:
                return outcome
            self._log.info("running the queued run", extra={"job": name, "queued_time": queued})
            now = self._clock.now()
            again = self._store.acquire(name, owner, queued, now, now + self._lease_seconds)
            if not again.taken:
                return outcome
            outcome = self._merge(outcome, self._run_due(spec, again.state, queued, owner, deadline))
        self._store.release(name, owner, take_queued=False)
        return outcome

    def _step_aside(self, spec: JobSpec, holder: JobState, moment: str, now: float) -> RunOutcome:
        context = {
            "job": spec.name,
            "scheduled_time": moment,
            "held_until": iso(holder.lease_expires_at or now),
        }
        if spec.overlap is Overlap.QUEUE and self._store.queue_one(spec.name, moment, now):
            self._log.info("job already running; queued one more run", extra=context)
            self._metrics.add_metric(name="JobQueued", unit="Count", value=1)
            return RunOutcome(spec.name, "queued")
        self._log.info("job already running; skipping this invocation", extra=context)
        self._metrics.add_metric(name="JobSkipped", unit="Count", value=1)
        return RunOutcome(spec.name, "skipped")

    def _run_due(
        self, spec: JobSpec, state: JobState, moment: str, owner: str, deadline: float
    ) -> RunOutcome:
        if state.last_success_at is not None:
            age = self._clock.now() - state.last_success_at
            self._metrics.add_metric(name="JobSecondsSinceSuccess", unit="Seconds", value=age)
        missed = missed_occurrences(spec.expression, state.last_scheduled_time, moment)
        if missed:
            self._log.warning(
                "job missed runs since its last success",
                extra={"job": spec.name, "missed": len(missed), "since": state.last_scheduled_time},
            )
            self._metrics.add_metric(name="JobMissedRuns", unit="Count", value=len(missed))
        due = [*missed[-MAX_CATCH_UP:], moment] if spec.catch_up is CatchUp.EACH else [moment]
        cursor = state.cursor
        if cursor is not None and state.cursor_scheduled_time and spec.catch_up is CatchUp.EACH:
            # Resume the occurrence the cursor belongs to before any later one.
            due = [t for t in due if t >= state.cursor_scheduled_time] or due
        counts: dict[str, int] = {}
        runs = 0
        try:
            job = spec.factory(self._resources)
            for when in due:
                context = JobContext(spec.name, when, deadline, self._clock, self._log, self._metrics, cursor)
                result = job(context)
                runs += 1
                _add(counts, result)
                self._store.record(
                    spec.name,
                    owner,
                    scheduled_time=when,
                    done=result.done,
                    cursor=result.cursor,
                    counts=result.counts,
                    now=self._clock.now(),
                )
                cursor = None
                if not result.done:
                    self._log.info("job stopped before its deadline; cursor saved", extra={"job": spec.name})
                    self._metrics.add_metric(name="JobSucceeded", unit="Count", value=1)
                    return RunOutcome(spec.name, "stopped", runs, len(missed), counts)
                if when != due[-1] and context.should_stop():
                    self._log.info("deadline reached during catch-up", extra={"job": spec.name})
                    break
        except Exception as exc:
            self._log.exception("job failed", extra={"job": spec.name, "scheduled_time": moment})
            self._metrics.add_metric(name="JobFailed", unit="Count", value=1)
            self._store.record_failure(spec.name, owner, f"{type(exc).__name__}: {exc}", self._clock.now())
            raise
        self._log.info("job done", extra={"job": spec.name, "runs": runs, "counts": counts})
        self._metrics.add_metric(name="JobSucceeded", unit="Count", value=1)
        return RunOutcome(spec.name, "done", runs, len(missed), counts)

    @staticmethod
    def _merge(first: RunOutcome, second: RunOutcome) -> RunOutcome:
        counts = dict(first.counts)
        for key, value in second.counts.items():
            counts[key] = counts.get(key, 0) + value
        return RunOutcome(first.job, second.status, first.runs + second.runs, first.missed, counts)


def missed_occurrences(expression: ScheduleExpression, last: str | None, current: str) -> list[str]:
    """Occurrences strictly between the last finished one and this one (none before the first run)."""
    if last is None:
        return []
    start, end = parse_iso(last), parse_iso(current)
    if expression.interval is not None:
        # Rate schedules drift (flexible windows, jitter): count whole intervals, rounding.
        missed = round((end - start) / expression.interval) - 1
        return [iso(start + k * expression.interval) for k in range(1, missed + 1)]
    return [iso(t) for t in expression.occurrences(start, end - 1)]


def _add(totals: dict[str, int], result: JobResult) -> None:
    for key, value in result.counts.items():
        totals[key] = totals.get(key, 0) + int(value)
