"""The built-in jobs build from what the template gives ScheduledJobsFunction, and run through the runner."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from lockgate.clock import FixedClock
from lockgate.config import load_config
from lockgate.inbox.models import Delivery, Status
from lockgate.inbox.store import InboxStore
from lockgate.jobs.contract import JobNotWired, JobResources
from lockgate.jobs.registry import job_registry
from lockgate.jobs.runner import JobRunner
from lockgate.jobs.state import JobStateStore
from lockgate.telemetry import CountingMetrics
from lockgate_infra.local.template import LocalPlan
from tests.support import Aws

ROOT = Path(__file__).resolve().parents[2]
LOG = logging.getLogger("lockgate.tests.jobs")
WIRED = (
    "sweep-inbox",
    "expire-approvals",
    "reconcile-operations",
    "approval-digest",
    "prune",
    "budget-report",
    "collect-batches",
    "eval",
)


@pytest.fixture
def resources(aws: Aws, clock: FixedClock) -> JobResources:
    # The function's environment exactly as the template declares it, resolved to moto's names.
    environment = LocalPlan.from_file(ROOT / "template.yaml").functions["ScheduledJobsFunction"].environment
    return JobResources(
        load_config(ROOT / "lockgate.toml"), aws.client, environment, clock, LOG, CountingMetrics()
    )


@pytest.mark.parametrize("name", WIRED)
def test_every_wired_built_in_job_builds_from_the_functions_environment(
    resources: JobResources, name: str
) -> None:
    job = job_registry(resources.config)[name].factory(resources)
    assert callable(job)


def test_where_the_eval_harness_is_not_installed_the_eval_job_fails_as_not_wired(
    resources: JobResources, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given ScheduledJobsFunction as deployed: the eval harness is packaged only with EvalJobsFunction
    import sys

    monkeypatch.setitem(sys.modules, "lockgate_infra.evals.job", None)
    # Then the eval job fails loudly, naming what is missing
    with pytest.raises(JobNotWired, match="not installed"):
        job_registry(resources.config)["eval"].factory(resources)


def test_given_a_stranded_delivery_when_sweep_inbox_runs_through_the_runner_then_it_is_requeued_once(
    aws: Aws, clock: FixedClock, resources: JobResources
) -> None:
    # Given a delivery stored long ago whose queue send failed (nothing on the queue)
    inbox = InboxStore(aws.client("dynamodb"), aws.inbox_table)
    now = int(clock.now())
    inbox.put_new(
        Delivery(
            pk="github#lost-1",
            source="github",
            delivery_id="lost-1",
            event_type="push",
            status=Status.RECEIVED,
            received_at=now - 3600,
            available_at=now - 3600,
            body=b"{}",
        )
    )
    runner = JobRunner(
        jobs=job_registry(resources.config),
        store=JobStateStore(aws.client("dynamodb"), aws.state_table),
        resources=resources,
        timeout_seconds=300,
        clock=clock,
        log=LOG,
        metrics=CountingMetrics(),
    )

    # When the sweep runs from its schedule
    outcome = runner.run("sweep-inbox", "2026-01-01T00:05:00Z", lambda: 300.0)

    # Then its pointer is back on the queue, once, and the job's heartbeat is recorded
    assert outcome.status == "done"
    messages = aws.drain(aws.queue_url)
    assert [json.loads(m["Body"])["pk"] for m in messages] == ["github#lost-1"]
    (state,) = JobStateStore(aws.client("dynamodb"), aws.state_table).all()
    assert state.name == "sweep-inbox" and state.last_success_at == clock.now()


def test_the_jobs_settings_take_the_state_table_timeout_resource_names_and_job_settings_only() -> None:
    from lockgate.errors import ConfigError
    from lockgate.settings import JobsSettings

    settings = JobsSettings.from_env(
        {
            "STATE_TABLE": "s",
            "JOBS_TIMEOUT_SECONDS": "120",
            "INBOX_QUEUE_URL": "u",
            "ANTHROPIC_API_KEY_REF": "secretsmanager:k",
            "LOCKGATE_EVAL_TASKS": "support-inbox",
            "AWS_SECRET_ACCESS_KEY": "x",
            "AWS_SESSION_TOKEN": "t",
        }
    )
    assert (settings.state_table, settings.timeout_seconds, settings.jobs) == ("s", 120, frozenset())
    assert settings.names == {  # never credentials
        "STATE_TABLE": "s",
        "INBOX_QUEUE_URL": "u",
        "ANTHROPIC_API_KEY_REF": "secretsmanager:k",
        "LOCKGATE_EVAL_TASKS": "support-inbox",
    }
    with pytest.raises(ConfigError, match="STATE_TABLE"):
        JobsSettings.from_env({})


def test_a_function_given_jobs_runs_only_those_and_a_misspelt_one_stops_its_cold_start(
    resources: JobResources,
) -> None:
    from lockgate.errors import ConfigError
    from lockgate.jobs.registry import only
    from lockgate.settings import JobsSettings

    registry = job_registry(resources.config)
    # Given JOBS=eval (EvalJobsFunction), Then only eval is there; unset, every job is
    assert list(only(registry, JobsSettings.from_env({"STATE_TABLE": "s", "JOBS": " eval "}).jobs)) == [
        "eval"
    ]
    assert only(registry, frozenset()) == registry
    # And a name that is no job is refused, naming it and the real ones
    with pytest.raises(ConfigError, match="evals.*sweep-inbox"):
        only(registry, frozenset({"evals"}))
