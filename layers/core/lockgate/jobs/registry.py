"""Which jobs exist: name → schedule expression, policies and a factory that builds the job.

``template.yaml`` declares one ``AWS::Scheduler::Schedule`` per entry here, and a test reads both,
so a job without a schedule (or a schedule without a job) fails the build, not production.

Built-in jobs live in ``lockgate.jobs.builtin`` and are built by ``lockgate.jobs.factories``; each
factory imports its module only when that job runs, so one job's import error never stops another.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from lockgate.config import LockgateConfig
from lockgate.errors import ConfigError
from lockgate.jobs import factories
from lockgate.jobs.contract import Factory, Job, JobNotWired, JobResources
from lockgate.jobs.schedule import ScheduleExpression
from lockgate.jobs.tasks import scheduled_task_factory


class Overlap(StrEnum):
    """What an invocation does when another run of the same job holds the lease."""

    SKIP = "skip"  # log and exit: the next occurrence does the work
    QUEUE = "queue"  # ask the running one for one more run (at most one waits)


class CatchUp(StrEnum):
    """What a run does about occurrences missed since the last success."""

    ONCE = "once"  # one run covers them (sweeps, expiries: the work is "whatever is due now")
    EACH = "each"  # run every missed occurrence, oldest first (per-day reports, scheduled tasks)


@dataclass(frozen=True)
class JobSpec:
    """One scheduled job."""

    name: str
    schedule: str  # the EventBridge Scheduler expression, UTC
    factory: Factory
    description: str
    overlap: Overlap = Overlap.SKIP
    catch_up: CatchUp = CatchUp.ONCE
    flexible_minutes: int = 0  # Scheduler's flexible time window (0 = OFF)
    loads_workflows: bool = False  # builds the workflows' tasks: a function running it checks them at start

    @property
    def expression(self) -> ScheduleExpression:
        """The parsed schedule."""
        return ScheduleExpression.parse(self.schedule)

    def overdue_after(self) -> int:
        """Seconds without a heartbeat after which the job counts as stopped (the alarm's threshold).

        Two of its longest gaps plus the flexible window: one late or failed-and-retried run is
        not an alarm, two missed in a row are.
        """
        return 2 * self.expression.longest_gap() + 60 * self.flexible_minutes


def module_factory(module: str, attribute: str = "build") -> Factory:
    """A factory that imports ``module`` when the job runs and calls its ``build(resources)``."""

    def build(resources: JobResources) -> Job:
        try:
            loaded = importlib.import_module(module)
        except ImportError as exc:
            raise JobNotWired(f"job code {module} is not installed here ({exc})") from exc
        make = getattr(loaded, attribute, None)
        if not callable(make):
            raise JobNotWired(f"{module} has no {attribute}(resources) function")
        job: Job = make(resources)
        return job

    return build


# The weekly eval needs the eval harness (an isolated moto shop, infra/lockgate_infra): deployed, it
# runs in EvalJobsFunction, which is packaged with it; ScheduledJobsFunction is not, and fails it as
# JobNotWired if asked.
BUILTIN_JOBS: tuple[JobSpec, ...] = (
    JobSpec(
        "sweep-inbox",
        "rate(5 minutes)",
        factories.sweep_inbox,
        "re-queue stranded deliveries, set aside those past the attempt limit",
    ),
    JobSpec(
        "expire-approvals",
        "rate(15 minutes)",
        factories.expire_approvals,
        "expire proposals past their decision or run window; tell the task",
        flexible_minutes=5,
        loads_workflows=True,
    ),
    JobSpec(
        "escalate-approvals",
        "rate(5 minutes)",
        factories.escalate_approvals,
        "send requests nobody decided in time to their tool's second group (escalate_roles)",
        flexible_minutes=1,
    ),
    JobSpec(
        "reconcile-operations",
        "rate(15 minutes)",
        factories.reconcile_operations,
        "resolve UNKNOWN ledger operations through the tool's reconcile hook, or escalate",
        flexible_minutes=5,
        loads_workflows=True,
    ),
    JobSpec(
        "approval-digest",
        "cron(0 8 * * ? *)",
        factories.approval_digest,
        "a daily digest of pending proposals to the reviewers",
    ),
    JobSpec(
        "budget-report",
        "cron(5 0 * * ? *)",
        factories.budget_report,
        "yesterday's model spend against the caps",
        catch_up=CatchUp.EACH,
        flexible_minutes=15,
    ),
    JobSpec(
        "eval",
        "cron(0 3 ? * MON *)",
        module_factory("lockgate_infra.evals.job"),
        "the weekly eval run; fails below the gate",
        flexible_minutes=60,
    ),
    JobSpec(
        "prune",
        "cron(30 2 * * ? *)",
        factories.prune,
        "old done deliveries, runs and operations past retention; report sizes",
        flexible_minutes=60,
    ),
    JobSpec(
        "collect-batches",
        "rate(10 minutes)",
        factories.collect_batches,
        "collect finished Message Batches results",
        overlap=Overlap.QUEUE,
        flexible_minutes=5,
    ),
)


def job_registry(config: LockgateConfig) -> dict[str, JobSpec]:
    """The built-in jobs plus one per scheduled task in ``[schedules]`` of lockgate.toml."""
    jobs = {spec.name: spec for spec in BUILTIN_JOBS}
    for name, schedule in config.schedules.items():
        if name in jobs:
            raise ConfigError(f"lockgate.toml: schedule {name!r} has the name of a built-in job")
        jobs[name] = JobSpec(
            name,
            schedule.expression,
            scheduled_task_factory(name),
            schedule.description or f"the {name} task, as an inbox event",
            catch_up=CatchUp(schedule.catch_up),
        )
    return jobs


def only(jobs: Mapping[str, JobSpec], names: frozenset[str]) -> dict[str, JobSpec]:
    """The jobs a function runs (its ``JOBS``; empty: all); ConfigError names any that do not exist."""
    unknown = sorted(names - set(jobs))
    if unknown:
        raise ConfigError(f"JOBS names no such job: {', '.join(unknown)} (jobs: {', '.join(jobs)})")
    return {name: spec for name, spec in jobs.items() if not names or name in names}
