"""A jobs function's object graph: the jobs it runs (its ``JOBS``), their state, and the runner."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from lockgate.config import LockgateConfig
from lockgate.jobs.contract import JobResources
from lockgate.jobs.registry import JobSpec, job_registry, only
from lockgate.jobs.runner import JobRunner
from lockgate.jobs.state import JobStateStore
from lockgate.runtime.deps import Deps
from lockgate.settings import JobsSettings
from lockgate.workflows import check_workflow_environment


@dataclass(frozen=True)
class JobsParts:
    """What the jobs handler runs: the runner, the jobs it may run, and their lease/heartbeat rows."""

    runner: JobRunner
    jobs: Mapping[str, JobSpec]
    store: JobStateStore
    resources: JobResources  # what each job is built from when it runs


def build_jobs(settings: JobsSettings, config: LockgateConfig, deps: Deps) -> JobsParts:
    """The runner for ``settings``; each job is built from the function's names only when it runs.

    When one of its jobs builds the workflows' tasks, their declared variables are checked here.
    """
    store = JobStateStore(deps.client("dynamodb"), settings.state_table)
    jobs = only(job_registry(config), settings.jobs)
    environ = {**settings.names, **settings.environ}
    if any(spec.loads_workflows for spec in jobs.values()):
        # As the worker does at start: a workflow missing a declared variable stops the function
        # now, with what to add to template.yaml, not at the first expiry or reconciliation.
        check_workflow_environment(config.workflows.packages, environ)
    resources = JobResources(
        config, deps.client, settings.names, deps.clock, deps.log, deps.metrics, environ=environ
    )
    runner = JobRunner(
        jobs=jobs,
        store=store,
        resources=resources,
        timeout_seconds=settings.timeout_seconds,
        clock=deps.clock,
        log=deps.log,
        metrics=deps.metrics,
    )
    return JobsParts(runner, jobs, store, resources)
