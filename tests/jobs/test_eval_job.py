"""The weekly eval job: runs `lockgate eval` in a child process, isolated from the stack's AWS endpoint."""

from __future__ import annotations

import pytest

from lockgate.clock import FixedClock
from lockgate.telemetry import CountingMetrics
from lockgate_infra.eval_job import EvalGateFailed, EvalJob, _isolated
from tests.jobs.conftest import context


def test_the_child_gets_no_aws_endpoint_and_only_fake_credentials() -> None:
    # Given the environment of a function under `lockgate local` (pointed at the embedded moto server)
    environ = {
        "AWS_ENDPOINT_URL": "http://127.0.0.1:5000",
        "AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:5000",
        "AWS_ACCESS_KEY_ID": "AKIAREAL",
        "INBOX_TABLE": "lockgate-local-InboxTable",
        "PATH": "/usr/bin",
    }
    # Then the eval's own sandbox can never send its calls there
    child = _isolated(environ)
    assert not [k for k in child if k.startswith("AWS_ENDPOINT_URL")]
    assert child["AWS_ACCESS_KEY_ID"] == "testing" and child["PATH"] == "/usr/bin"
    # And none of the functions' resource names
    assert "INBOX_TABLE" not in child


def test_a_suite_that_cannot_run_fails_the_job_loudly(clock: FixedClock) -> None:
    # Given the job told to evaluate a task that has no suite
    job = EvalJob({"LOCKGATE_EVAL_TASKS": "no-such-task", "LOCKGATE_EVAL_RUNS": "1"})
    metrics = CountingMetrics()
    # When it runs, Then it raises (Scheduler retries, the DLQ and the error alarm see it), naming the task
    with pytest.raises(EvalGateFailed, match="no-such-task: exit 2"):
        job(context(clock, metrics))
    assert metrics.totals["EvalGateFailed"] == 1
