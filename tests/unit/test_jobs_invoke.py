"""`lockgate jobs run NAME --stack S`: one synchronous, never retried invoke of the job's function.

moto cannot run Lambda code, so the Lambda API is botocore's Stubber: it checks the request the
CLI sends and answers as Lambda does.
"""

from __future__ import annotations

import argparse
import io
import json
from typing import Any

import boto3
import pytest
from botocore.response import StreamingBody
from botocore.stub import Stubber

from lockgate_infra.cli.jobs import run_jobs
from lockgate_infra.cli.targets import Target
from tests.integration.test_cli import ROOT


class StubbedSession:
    """A boto3 session whose Lambda client answers from a Stubber."""

    def __init__(self, answer: dict[str, Any], expected: dict[str, Any]) -> None:
        self.lambda_ = boto3.session.Session(
            aws_access_key_id="x", aws_secret_access_key="x", region_name="us-east-1"
        ).client("lambda")
        self.stubber = Stubber(self.lambda_)
        self.stubber.add_response("invoke", answer, expected)
        self.stubber.activate()

    def client(self, service: str, **kwargs: Any) -> Any:
        assert service == "lambda"
        self.client_kwargs = kwargs
        return self.lambda_


def run(answer: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str, StubbedSession]:
    expected = {
        "FunctionName": "lockgate-ScheduledJobsFunction-abc",
        "Payload": json.dumps({"job": "sweep-inbox", "scheduled_time": "2026-12-01T09:00:00Z"}).encode(),
    }
    session = StubbedSession(answer, expected)
    target = Target(session, None, {"ScheduledJobsFunction": expected["FunctionName"]}, "stack lockgate")  # type: ignore[arg-type]
    args = argparse.Namespace(
        jobs_action="run", name="sweep-inbox", time="2026-12-01T09:00:00Z", stack="lockgate"
    )
    code = run_jobs(args, target, ROOT)
    out, err = capsys.readouterr()
    return code, out, err, session


def _payload(data: dict[str, Any]) -> StreamingBody:
    raw = json.dumps(data).encode()
    return StreamingBody(io.BytesIO(raw), len(raw))


def test_the_job_runs_once_on_its_function_and_its_outcome_is_printed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    outcome = {"job": "sweep-inbox", "status": "ran", "counts": {"requeued": 2}}
    code, out, err, session = run({"StatusCode": 200, "Payload": _payload(outcome)}, capsys)
    assert code == 0 and json.loads(out) == outcome
    session.stubber.assert_no_pending_responses()
    # and the wait is announced on stderr (stdout stays the job's JSON)
    assert (
        err == "running sweep-inbox on ScheduledJobsFunction of stack lockgate; waiting for it to finish…\n"
    )
    # and the client never retries (a retried invoke would be a second run) and waits out the job
    config = session.client_kwargs["config"]
    assert config.retries == {"total_max_attempts": 1} and config.read_timeout == 960


def test_a_job_that_failed_in_its_function_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    error = {"errorMessage": "boom", "errorType": "RuntimeError"}
    code, out, _, _ = run(
        {"StatusCode": 200, "FunctionError": "Unhandled", "Payload": _payload(error)}, capsys
    )
    assert code == 1 and json.loads(out) == error
