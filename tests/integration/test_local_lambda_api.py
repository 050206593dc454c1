"""The embedded stack's Lambda Invoke API keeps the promises AWS documents for Invoke (AWS Lambda API
reference, "Invoke"), as boto3's own Lambda client sees them: the approval callback asks the worker's
alias whether an edited version would run, exactly as it does on AWS.

- RequestResponse answers 200 with the handler's JSON as the payload;
- a handler that raises answers 200 too, with ``FunctionError: Unhandled`` and
  ``{"errorMessage", "errorType"}`` as the payload;
- a function is named by its name, its ARN, or its ARN with a qualifier (an alias such as ``live``);
- an unknown function is ``ResourceNotFoundException`` (404); a payload that is not JSON is
  ``InvalidRequestContentException`` (400);
- Event answers 202 and runs the handler after answering; DryRun answers 204 and runs nothing.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from lockgate_infra.local.lambda_api import LambdaApi

NAME = "lockgate-local-EchoFunction"
ARN = f"arn:aws:lambda:us-east-1:123456789012:function:{NAME}"


@pytest.fixture
def api() -> Any:
    calls: list[tuple[str, Any]] = []
    done = threading.Event()

    def invoke(logical_id: str, event: Any) -> Any:
        calls.append((logical_id, event))
        done.set()
        if event.get("fail"):
            raise ValueError("it failed")
        return {"echo": event}

    with LambdaApi({NAME: "EchoFunction"}, invoke) as served:
        client = boto3.session.Session(
            aws_access_key_id="x",
            aws_secret_access_key="x",
            region_name="us-east-1",  # noqa: S106
        ).client("lambda", endpoint_url=served.url)
        yield client, calls, done


@pytest.mark.parametrize("name", [NAME, ARN, f"{ARN}:live", f"{NAME}:live", f"123456789012:function:{NAME}"])
def test_request_response_returns_the_handlers_json_whatever_the_function_is_called(
    api: Any, name: str
) -> None:
    client, calls, _ = api
    response = client.invoke(FunctionName=name, Payload=json.dumps({"a": 1}).encode())
    assert response["StatusCode"] == 200 and "FunctionError" not in response
    assert json.loads(response["Payload"].read()) == {"echo": {"a": 1}}
    assert calls == [("EchoFunction", {"a": 1})]


def test_a_handler_that_raises_is_a_function_error_in_a_200(api: Any) -> None:
    client, _, _ = api
    response = client.invoke(FunctionName=NAME, Payload=b'{"fail": true}')
    assert (response["StatusCode"], response["FunctionError"]) == (200, "Unhandled")
    assert json.loads(response["Payload"].read()) == {"errorMessage": "it failed", "errorType": "ValueError"}


def test_an_unknown_function_and_a_payload_that_is_not_json_are_refused(api: Any) -> None:
    client, calls, _ = api
    with pytest.raises(ClientError) as unknown:
        client.invoke(FunctionName="lockgate-local-Nobody", Payload=b"{}")
    assert unknown.value.response["Error"]["Code"] == "ResourceNotFoundException"
    assert unknown.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404
    with pytest.raises(ClientError) as garbled:
        client.invoke(FunctionName=NAME, Payload=b"{not json")
    assert garbled.value.response["Error"]["Code"] == "InvalidRequestContentException"
    assert calls == []


def test_event_answers_at_once_and_runs_it_dry_run_runs_nothing(api: Any) -> None:
    client, calls, done = api
    assert client.invoke(FunctionName=NAME, InvocationType="DryRun", Payload=b"{}")["StatusCode"] == 204
    assert calls == []
    assert client.invoke(FunctionName=NAME, InvocationType="Event", Payload=b'{"b": 2}')["StatusCode"] == 202
    assert done.wait(5) and calls == [("EchoFunction", {"b": 2})]
