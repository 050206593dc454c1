"""Scheduled jobs Lambda: EventBridge Scheduler sends {"job": name, "scheduled_time": ...}; run it once.

Two functions run this handler: ScheduledJobsFunction (every job) and EvalJobsFunction (``JOBS=eval``,
packaged with the eval harness). They differ only in what is packaged with them and in their roles.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit, single_metric

from lockgate.config import load_config
from lockgate.errors import LockgateError
from lockgate.jobs.health import job_health
from lockgate.runtime.deps import lambda_deps
from lockgate.runtime.jobs import build_jobs
from lockgate.settings import JobsSettings
from lockgate.telemetry import expect_empty_metrics

expect_empty_metrics()  # an invocation that adds no metric is normal: no warning for it
logger = Logger()
metrics = Metrics()

settings = JobsSettings.from_env(os.environ)
deps = lambda_deps(settings.names, logger, metrics, timeout_seconds=settings.timeout_seconds)
clock = deps.clock
parts = build_jobs(settings, load_config(Path(__file__).parent / settings.config_path, settings.stage), deps)
jobs, store, runner = parts.jobs, parts.store, parts.runner


def publish_heartbeats() -> None:
    """Every job's heartbeat age, one metric per job: what the missed-heartbeat alarms watch."""
    for health in job_health(jobs, store, clock.now()):
        if health.age_seconds is None:
            continue  # never ran: no data, and the alarm treats missing data as breaching
        with single_metric(
            name="JobHeartbeatAge",
            unit=MetricUnit.Seconds,
            value=health.age_seconds,
            namespace=metrics.namespace,
        ) as metric:
            metric.add_dimension(name="service", value=metrics.service or "lockgate")
            metric.add_dimension(name="Job", value=health.name)


@metrics.log_metrics
@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: Any) -> dict[str, object]:
    """Run one job; an exception fails the invocation: Lambda retries it, then dead-letters it."""
    name = str(event.get("job", ""))
    logger.append_keys(job=name)
    metrics.add_dimension(name="Job", value=name[:100] or "unknown")
    try:
        outcome = runner.run(
            name,
            event.get("scheduled_time"),
            remaining_seconds=lambda: context.get_remaining_time_in_millis() / 1000,
        )
    finally:
        try:
            publish_heartbeats()
        except LockgateError:  # the State table unreachable: the job's own outcome still stands
            logger.exception("could not publish heartbeats")
    return outcome.as_dict()
