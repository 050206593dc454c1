"""The embedded local stack: moto server, HTTP API gateway and SQS poller, built from a template.

A small test template and two tiny handlers (written under tmp_path) stand in for the real
functions: a receiver that stores the API Gateway event in a table and queues a message, and a
worker that records each record it sees and reports failures as Lambda partial batch responses.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from lockgate_infra.local.gateway import Gateway
from lockgate_infra.local.poller import BatchResponseError, failed_message_ids, sqs_record
from lockgate_infra.local.run import (
    LocalStackChoice,
    local_state,
    log_path,
    read_local_state,
    run_local,
    state_path,
)
from lockgate_infra.local.stack import LocalStack
from lockgate_infra.local.template import LocalPlan, Route, load_template

ROOT = Path(__file__).resolve().parents[2]
REAL_TEMPLATE = ROOT / "template.yaml"

TEMPLATE = """
AWSTemplateFormatVersion: "2010-09-09"
Transform: AWS::Serverless-2016-10-31
Parameters:
  Stage: {Type: String, Default: test}
Globals:
  Function:
    Timeout: 5
    Handler: app.handler
    Environment:
      Variables:
        EVENTS_TABLE: !Ref EventsTable
        STAGE: !Ref Stage
Resources:
  EventsTable:
    Type: AWS::DynamoDB::Table
    Properties:
      BillingMode: PAY_PER_REQUEST
      AttributeDefinitions: [{AttributeName: pk, AttributeType: S}]
      KeySchema: [{AttributeName: pk, KeyType: HASH}]
      TimeToLiveSpecification: {AttributeName: ttl, Enabled: true}
  WorkQueue:
    Type: AWS::SQS::Queue
    Properties:
      VisibilityTimeout: 1
      RedrivePolicy:
        deadLetterTargetArn: !GetAtt WorkDLQ.Arn
        maxReceiveCount: 2
  WorkDLQ:
    Type: AWS::SQS::Queue
  SigningKey:
    Type: AWS::SecretsManager::Secret
    Properties:
      GenerateSecretString: {SecretStringTemplate: '{"user": "local"}', GenerateStringKey: key}
  Receiver:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: functions/receiver/
      Environment:
        Variables:
          WORK_QUEUE_URL: !Ref WorkQueue
          SIGNING_KEY: !Ref SigningKey
      Events:
        Webhook: {Type: HttpApi, Properties: {Path: "/webhooks/{source}", Method: POST}}
        Blob: {Type: HttpApi, Properties: {Path: "/blobs/{name}", Method: GET}}
  Worker:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: functions/worker/
      Timeout: 30
      Events:
        Work:
          Type: SQS
          Properties:
            Queue: !GetAtt WorkQueue.Arn
            BatchSize: 10
            FunctionResponseTypes: [ReportBatchItemFailures]
"""

RECEIVER = """
import base64, json, os
import boto3

# Built at import, as a real handler's clients are: they must already point at moto.
dynamodb = boto3.client("dynamodb")
sqs = boto3.client("sqs")


def handler(event, context):
    if event["routeKey"] == "GET /blobs/{name}":
        if event["pathParameters"]["name"] == "boom":
            raise RuntimeError("boom")
        body = base64.b64encode(bytes(range(256))).decode()
        return {"statusCode": 200, "headers": {"content-type": "application/octet-stream"},
                "body": body, "isBase64Encoded": True}
    key = event["pathParameters"]["source"] + "#" + event["requestContext"]["requestId"]
    dynamodb.put_item(TableName=os.environ["EVENTS_TABLE"], Item={
        "pk": {"S": key},
        "event": {"S": json.dumps(event)},
        "config": {"S": os.environ["LOCKGATE_CONFIG"]},
        "stage": {"S": os.environ["STAGE"]},
        "function": {"S": context.function_name},
        "remaining_ms": {"N": str(context.get_remaining_time_in_millis())},
    })
    text = event.get("body", "")
    if event["isBase64Encoded"]:
        text = base64.b64decode(text).decode(errors="replace")
    message = json.dumps({"key": key, "text": text})
    sqs.send_message(QueueUrl=os.environ["WORK_QUEUE_URL"], MessageBody=message)
    return {"statusCode": 202, "headers": {"content-type": "application/json", "x-delivery": key},
            "cookies": ["seen=1; Path=/"], "body": json.dumps({"stored": key})}
"""

WORKER = """
import json, os
import boto3

dynamodb = boto3.client("dynamodb")


def handler(event, context):
    failures = []
    for record in event["Records"]:
        message = json.loads(record["body"])
        count = record["attributes"]["ApproximateReceiveCount"]
        dynamodb.put_item(TableName=os.environ["EVENTS_TABLE"], Item={
            "pk": {"S": "seen#" + message["text"] + "#" + count},
            "batch": {"N": str(len(event["Records"]))},
            "source": {"S": record["eventSourceARN"]},
            "region": {"S": record["awsRegion"]},
        })
        if message["text"] == "crash":
            raise RuntimeError("the whole invocation fails")
        if message["text"] == "fail":
            failures.append({"itemIdentifier": record["messageId"]})
    return {"batchItemFailures": failures}
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A repo-shaped folder: template.yaml, lockgate.toml and the two handlers."""
    (tmp_path / "template.yaml").write_text(TEMPLATE, encoding="utf-8")
    (tmp_path / "lockgate.toml").write_text(
        '[sources.github]\nscheme = "github"\nsecrets = ["secretsmanager:lockgate/webhooks/github"]\n',
        encoding="utf-8",
    )
    for name, code in (("receiver", RECEIVER), ("worker", WORKER)):
        folder = tmp_path / "functions" / name
        folder.mkdir(parents=True)
        (folder / "app.py").write_text(textwrap.dedent(code), encoding="utf-8")
    return tmp_path


@pytest.fixture
def stack(project: Path) -> Iterator[LocalStack]:
    with LocalStack(project / "template.yaml") as running:
        running.start_gateway()
        yield running


def request(
    url: str, data: bytes | None = None, method: str = "POST", headers: list[tuple[str, str]] | None = None
) -> tuple[int, Any, bytes]:
    """One HTTP request; http.client so that a header can be sent twice."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    try:
        connection.putrequest(method, parts.path + (f"?{parts.query}" if parts.query else ""))
        for name, value in headers or []:
            connection.putheader(name, value)
        if data is not None:
            connection.putheader("Content-Length", str(len(data)))
        connection.endheaders(data)
        response = connection.getresponse()
        return response.status, response.headers, response.read()
    finally:
        connection.close()


def rows(stack: LocalStack) -> dict[str, dict[str, Any]]:
    items = stack.client("dynamodb").scan(TableName=stack.resources["EventsTable"], ConsistentRead=True)[
        "Items"
    ]
    return {item["pk"]["S"]: {k: next(iter(v.values())) for k, v in item.items()} for item in items}


def stored_event(stack: LocalStack) -> dict[str, Any]:
    (row,) = [r for pk, r in rows(stack).items() if pk.startswith("github#")]
    return {**row, "event": json.loads(row["event"])}


def queue_counts(stack: LocalStack, logical_id: str) -> tuple[int, int]:
    attributes = stack.client("sqs").get_queue_attributes(
        QueueUrl=stack.resources[logical_id],
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    return int(attributes["ApproximateNumberOfMessages"]), int(
        attributes["ApproximateNumberOfMessagesNotVisible"]
    )


def post(stack: LocalStack, text: str) -> None:
    assert stack.gateway is not None
    status, _, _ = request(f"{stack.gateway.url}/webhooks/github", text.encode())
    assert status == 202


# ------------------------------------------------------------------ the gateway


def test_given_a_post_when_it_reaches_the_receiver_then_it_gets_a_payload_v2_event_and_writes_a_row(stack):
    # Given a webhook with a query string, repeated and mixed-case headers, and cookies
    assert stack.gateway is not None
    status, headers, body = request(
        f"{stack.gateway.url}/webhooks/github?a=1&a=2&b=",
        b'{"hello": "world"}',
        headers=[
            ("X-Hub-Signature-256", "sha256=abc"),
            ("Content-Type", "application/json"),
            ("Cookie", "c1=v1; c2=v2"),
            ("User-Agent", "GitHub-Hookshot/1"),
        ],  # fmt: skip
    )
    # Then the handler's response comes back as API Gateway would send it
    assert status == 202
    assert headers["x-delivery"].startswith("github#")
    assert headers.get_all("set-cookie") == ["seen=1; Path=/"]
    assert json.loads(body) == {"stored": headers["x-delivery"]}
    # And the row the handler wrote holds a payload-2.0 event
    row = stored_event(stack)
    event = row["event"]
    assert event["version"] == "2.0"
    assert event["routeKey"] == "POST /webhooks/{source}"
    assert (event["rawPath"], event["rawQueryString"]) == ("/webhooks/github", "a=1&a=2&b=")
    assert event["queryStringParameters"] == {"a": "1,2", "b": ""}
    assert event["pathParameters"] == {"source": "github"}
    assert event["headers"]["x-hub-signature-256"] == "sha256=abc"
    assert event["headers"]["content-type"] == "application/json"
    assert all(name == name.lower() for name in event["headers"])
    assert "cookie" not in event["headers"]
    assert event["cookies"] == ["c1=v1", "c2=v2"]
    assert (event["body"], event["isBase64Encoded"]) == ('{"hello": "world"}', False)
    context = event["requestContext"]
    assert context["http"] == {
        "method": "POST",
        "path": "/webhooks/github",
        "protocol": "HTTP/1.1",
        "sourceIp": "127.0.0.1",
        "userAgent": "GitHub-Hookshot/1",
    }
    assert context["routeKey"] == "POST /webhooks/{source}"
    assert context["stage"] == "$default"
    assert abs(context["timeEpoch"] / 1000 - time.time()) < 60
    assert row["pk"] == f"github#{context['requestId']}"
    # And the function ran with its template environment, the stack's config and a Lambda context
    assert row["stage"] == "test"
    assert row["config"] == str(stack.config_path)
    assert row["function"] == "lockgate-local-Receiver"
    assert 0 < int(row["remaining_ms"]) <= 5000


def test_given_repeated_headers_then_they_are_comma_joined(stack):
    assert stack.gateway is not None
    status, _, _ = request(
        f"{stack.gateway.url}/webhooks/github", b"x", headers=[("X-Tag", "a"), ("x-tag", "b")]
    )
    assert status == 202
    assert stored_event(stack)["event"]["headers"]["x-tag"] == "a,b"


def test_given_a_binary_body_then_the_event_carries_it_base64_encoded(stack):
    payload = bytes([0xFF, 0x00, 0xFE, 0x80])
    assert stack.gateway is not None
    request(f"{stack.gateway.url}/webhooks/github", payload)
    event = stored_event(stack)["event"]
    assert event["isBase64Encoded"] is True
    assert base64.b64decode(event["body"]) == payload


def test_given_always_base64_then_even_a_text_body_is_base64_encoded(stack):
    with Gateway(stack.plan.routes, stack.invoke, always_base64=True) as gateway:
        request(f"{gateway.url}/webhooks/github", b"plain text")
    event = stored_event(stack)["event"]
    assert (event["isBase64Encoded"], base64.b64decode(event["body"])) == (True, b"plain text")


def test_given_a_base64_response_then_the_client_gets_the_bytes(stack):
    assert stack.gateway is not None
    status, headers, body = request(f"{stack.gateway.url}/blobs/any", method="GET")
    assert (status, headers["content-type"], body) == (200, "application/octet-stream", bytes(range(256)))


def test_given_an_unknown_route_or_a_failing_handler_then_404_and_500_as_api_gateway_answers(stack, caplog):
    assert stack.gateway is not None
    assert request(f"{stack.gateway.url}/nowhere", b"")[::2] == (404, b'{"message":"Not Found"}')
    assert request(f"{stack.gateway.url}/webhooks/github", method="GET")[0] == 404  # wrong method
    assert request(f"{stack.gateway.url}/blobs/boom", method="GET")[::2] == (
        500,
        b'{"message":"Internal Server Error"}',
    )
    assert "RuntimeError: boom" in caplog.text  # the traceback is logged, not sent


def test_given_a_chunked_body_or_one_over_the_limit_then_it_is_read_whole_or_refused_with_413():
    invoked: list[dict[str, Any]] = []

    def record(function: str, event: dict[str, Any]) -> dict[str, Any]:
        invoked.append(event)
        return {"statusCode": 200, "body": "ok"}

    routes = (Route("POST", "/in/{rest+}", "Fn"), Route("ANY", "$default", "Other"))
    with Gateway(routes, record, max_body_bytes=8) as gateway:
        parts = urlsplit(gateway.url)
        connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
        connection.request("POST", "/in/a/b%20c", body=iter([b"ab", b"cd"]), encode_chunked=True)
        assert connection.getresponse().status == 200
        connection.close()
        assert request(f"{gateway.url}/in/x", b"123456789")[::2] == (
            413,
            b'{"message":"Request Entity Too Large"}',
        )
        assert request(f"{gateway.url}/anything/else", method="GET")[0] == 200
    (chunked, fallback) = invoked
    assert (chunked["body"], chunked["pathParameters"]) == ("abcd", {"rest": "a/b c"})
    assert chunked["rawPath"] == "/in/a/b%20c"
    assert (fallback["routeKey"], "pathParameters" in fallback) == ("$default", False)


# ------------------------------------------------------------------ the SQS poller


def wait_for(condition: Any, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_given_two_messages_and_one_reported_failure_then_only_the_failed_one_stays_in_the_queue(stack):
    # Given two deliveries queued by the receiver before the worker starts (so they come in one batch)
    post(stack, "ok")
    post(stack, "fail")
    # When the poller hands them to the worker, which reports one batch item failure
    (poller,) = stack.start_pollers(wait_seconds=0)
    wait_for(lambda: poller.deleted >= 1)
    poller.stop()  # well before the 1 s visibility timeout brings the failed one back
    # Then both were in one batch, each received once
    seen = rows(stack)
    assert seen["seen#ok#1"]["batch"] == seen["seen#fail#1"]["batch"] == "2"
    assert seen["seen#ok#1"]["source"] == "arn:aws:sqs:us-east-1:123456789012:lockgate-local-WorkQueue"
    assert seen["seen#ok#1"]["region"] == "us-east-1"
    # And the succeeded one was deleted; the failed one is still there, hidden...
    assert queue_counts(stack, "WorkQueue") == (0, 1)
    # ...until the visibility timeout makes it visible again
    again = stack.client("sqs").receive_message(
        QueueUrl=stack.resources["WorkQueue"],
        WaitTimeSeconds=3,
        MaxNumberOfMessages=10,
        AttributeNames=["All"],
    )["Messages"]
    assert [json.loads(m["Body"])["text"] for m in again] == ["fail"]
    assert again[0]["Attributes"]["ApproximateReceiveCount"] == "2"


def test_given_a_message_that_keeps_failing_then_it_is_retried_and_then_dead_lettered(stack):
    post(stack, "ok")
    post(stack, "fail")
    stack.start_pollers(wait_seconds=0)
    # When the stack drains, retries included
    assert stack.drain(timeout=10, include_retries=True)
    # Then the good message ran once, the failing one twice (maxReceiveCount 2), then went to the DLQ
    assert sorted(pk for pk in rows(stack) if pk.startswith("seen#")) == [
        "seen#fail#1",
        "seen#fail#2",
        "seen#ok#1",
    ]
    assert queue_counts(stack, "WorkQueue") == (0, 0)
    assert queue_counts(stack, "WorkDLQ") == (1, 0)


def test_given_a_handler_that_raises_then_no_message_of_the_batch_is_deleted(stack, caplog):
    post(stack, "ok")
    post(stack, "crash")
    (poller,) = stack.start_pollers(wait_seconds=0)
    wait_for(lambda: poller.failed_invocations >= 1)
    poller.stop()
    assert (poller.invocations, poller.deleted) == (1, 0)
    assert queue_counts(stack, "WorkQueue") == (0, 2)
    assert "RuntimeError: the whole invocation fails" in caplog.text
    again = stack.client("sqs").receive_message(
        QueueUrl=stack.resources["WorkQueue"], WaitTimeSeconds=3, MaxNumberOfMessages=10
    )["Messages"]
    assert sorted(json.loads(m["Body"])["text"] for m in again) == ["crash", "ok"]


def test_given_an_idle_stack_then_drain_returns_promptly(stack):
    stack.start_pollers(wait_seconds=0)
    started = time.monotonic()
    assert stack.drain(timeout=5)
    assert time.monotonic() - started < 1


@pytest.mark.parametrize(
    ("response", "failed"),
    [
        (None, set()),
        ({}, set()),
        ({"batchItemFailures": []}, set()),
        ({"batchItemFailures": None}, set()),
        ({"batchItemFailures": [{"itemIdentifier": "m2"}]}, {"m2"}),
        ({"batchItemFailures": [{"itemIdentifier": ""}]}, BatchResponseError),
        ({"batchItemFailures": [{"itemIdentifier": None}]}, BatchResponseError),
        ({"batchItemFailures": [{"id": "m1"}]}, BatchResponseError),
        ({"batchItemFailures": [{"itemIdentifier": "not-in-batch"}]}, BatchResponseError),
        ({"batchItemFailures": "m1"}, BatchResponseError),
        (["m1"], BatchResponseError),
    ],
)
def test_given_a_batch_response_then_failed_ids_follow_lambdas_rules(response, failed):
    # Lambda: empty or null means all succeeded; a malformed identifier fails the whole batch.
    if failed is BatchResponseError:
        with pytest.raises(BatchResponseError):
            failed_message_ids(response, {"m1", "m2"})
    else:
        assert failed_message_ids(response, {"m1", "m2"}) == failed


def test_given_message_attributes_then_the_record_carries_them_as_lambda_does():
    message = {
        "MessageId": "m1", "ReceiptHandle": "r1", "Body": "b",
        "MD5OfBody": "x", "MD5OfMessageAttributes": "y",
        "Attributes": {"ApproximateReceiveCount": "3", "SentTimestamp": "1"},
        "MessageAttributes": {
            "kind": {"DataType": "String", "StringValue": "refund"},
            "blob": {"DataType": "Binary", "BinaryValue": b"\x00\x01"},
        },
    }  # fmt: skip
    record = sqs_record(message, "arn:aws:sqs:us-east-1:123456789012:q", "us-east-1")
    assert record["attributes"]["ApproximateReceiveCount"] == "3"
    assert record["messageAttributes"] == {
        "kind": {
            "dataType": "String",
            "stringValue": "refund",
            "stringListValues": [],
            "binaryListValues": [],
        },
        "blob": {"dataType": "Binary", "binaryValue": "AAE=", "stringListValues": [], "binaryListValues": []},
    }
    assert (record["eventSource"], record["md5OfMessageAttributes"]) == ("aws:sqs", "y")


# ------------------------------------------------------------------ lifecycle, state file, run_local


def test_given_a_stack_when_it_stops_then_the_process_environment_is_restored(project, monkeypatch):
    monkeypatch.setenv("AWS_PROFILE", "someone")
    before = dict(os.environ)
    with LocalStack(project / "template.yaml") as stack:
        stack.load_function("Worker")
        assert os.environ["AWS_ENDPOINT_URL"] == stack.endpoint_url
        assert "AWS_PROFILE" not in os.environ
        assert os.environ["EVENTS_TABLE"] == "lockgate-local-EventsTable"
        ttl = stack.client("dynamodb").describe_time_to_live(TableName=stack.resources["EventsTable"])
        assert ttl["TimeToLiveDescription"] == {"TimeToLiveStatus": "ENABLED", "AttributeName": "ttl"}
        name = stack.plan.functions["Receiver"].environment["SIGNING_KEY"]
        secret = stack.client("secretsmanager").get_secret_value(SecretId=name)
        assert json.loads(secret["SecretString"])["user"] == "local"
        assert len(json.loads(secret["SecretString"])["key"]) >= 32
    assert dict(os.environ) == before


def test_given_an_aws_profile_this_machine_lacks_then_a_fresh_process_starts_a_stack(project, tmp_path):
    # Given a shell whose AWS_PROFILE names no profile here (e.g. one for another machine), in a new
    # process: moto's CloudFormation support is imported at the stack's start and makes a boto3 Session
    config = tmp_path / "aws-config"
    config.write_text("", encoding="utf-8")
    environ = {**os.environ, "AWS_PROFILE": "not-on-this-machine", "AWS_CONFIG_FILE": str(config)}
    script = (
        "import os, sys\n"
        "from lockgate_infra.local.stack import LocalStack\n"
        "with LocalStack(sys.argv[1]) as stack:\n"
        "    print(sorted(stack.resources)[0], os.environ.get('AWS_PROFILE'))\n"
        "print(os.environ['AWS_PROFILE'])\n"
    )
    # When it starts a stack, Then the stack runs without the profile and gives it back when it stops
    done = subprocess.run(  # noqa: S603 - this interpreter, a fixed script
        [sys.executable, "-c", script, str(project / "template.yaml")],
        env=environ, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == ["EventsTable None", "not-on-this-machine"]


def test_given_run_local_then_it_serves_writes_the_state_file_and_removes_it_on_stop(project):
    stop, seen = threading.Event(), {}
    output = _Output()

    def ready(stack: LocalStack) -> None:
        seen["state"] = read_local_state(project)
        assert stack.gateway is not None
        seen["status"] = request(f"{stack.gateway.url}/webhooks/github", b"hi")[0]
        stop.set()

    status = run_local(project / "lockgate.toml", 0, template_path=project / "template.yaml",
                       out=output, stop=stop, ready=ready)  # fmt: skip
    assert status == 0
    state = seen["state"]
    assert state["pid"] == os.getpid()
    assert state["gateway_url"].startswith("http://127.0.0.1:")
    assert state["endpoint_url"].startswith("http://127.0.0.1:")
    assert state["region"] == "us-east-1"
    assert state["resources"]["EventsTable"] == "lockgate-local-EventsTable"
    assert state["resources"]["WorkQueue"] == f"{state['endpoint_url']}/123456789012/lockgate-local-WorkQueue"
    assert state["routes"][0] == {"routeKey": "POST /webhooks/{source}", "function": "Receiver"}
    assert seen["status"] == 202
    assert f"gateway:      {state['gateway_url']}" in output.text
    assert "dev secret:   github = " in output.text
    assert state["port"] == int(state["gateway_url"].rsplit(":", 1)[1])
    assert not state_path(project, state["port"]).exists()
    assert read_local_state(project) is None


def _start(project: Path, output: _Output) -> tuple[threading.Thread, threading.Event, dict[str, Any]]:
    """``lockgate local`` on a free port, in a thread; returns once it serves."""
    stop, ready, seen = threading.Event(), threading.Event(), {}

    def on_ready(stack: LocalStack) -> None:
        assert stack.gateway is not None
        seen["port"], seen["url"] = stack.gateway.port, stack.gateway.url
        ready.set()

    thread = threading.Thread(
        target=run_local,
        args=(project / "lockgate.toml", 0),
        kwargs={"template_path": project / "template.yaml", "out": output, "stop": stop, "ready": on_ready},
        daemon=True,
    )
    thread.start()
    assert ready.wait(60), output.text
    return thread, stop, seen


def test_given_two_stacks_in_one_checkout_then_each_has_its_state_and_stopping_one_leaves_the_other(
    project: Path,
) -> None:
    # Given another `lockgate local` already serving from this checkout on port 8788 (its own
    # process in real use: one process holds one stack, whose environment is the process's)
    other = state_path(project, 8788)
    other.parent.mkdir(parents=True, exist_ok=True)
    other.write_text(json.dumps({"pid": os.getpid(), "port": 8788, "gateway_url": "http://127.0.0.1:8788"}))
    # When a second one starts on a free port
    thread, stop, seen = _start(project, _Output())
    try:
        # Then each is found by its port, and a command that names none must say which it means
        assert read_local_state(project, seen["port"])["gateway_url"] == seen["url"]  # type: ignore[index]
        assert read_local_state(project, 8788)["gateway_url"] == "http://127.0.0.1:8788"  # type: ignore[index]
        with pytest.raises(LocalStackChoice, match=r"2 local stacks are running .*8788.* --local-port"):
            read_local_state(project)
        # And a third asked for a port that one of them holds refuses, changing nothing
        refused = _Output()
        assert (
            run_local(project / "lockgate.toml", 8788, template_path=project / "template.yaml", out=refused)
            == 2
        )
        assert "already runs on port 8788" in refused.text
    finally:
        stop.set()
        thread.join(30)
    # When the second one stops, only its own state file goes
    assert not state_path(project, seen["port"]).exists()
    assert other.exists()
    assert read_local_state(project)["port"] == 8788  # type: ignore[index]


def test_given_a_function_that_logs_json_then_the_console_shows_one_line_and_the_file_keeps_the_json(
    project: Path,
) -> None:
    # Given a receiver that logs as Powertools does: a JSON record and an embedded-metric blob
    app = project / "functions" / "receiver" / "app.py"
    app.write_text(
        app.read_text(encoding="utf-8").replace(
            '    text = event.get("body", "")',
            '    print(json.dumps({"level": "INFO", "message": "delivery stored", "delivery": key,'
            ' "cold_start": True}))\n'
            '    print(json.dumps({"_aws": {"CloudWatchMetrics": []}, "DeliveriesStored": [1.0]}))\n'
            '    text = event.get("body", "")',
        ),
        encoding="utf-8",
    )
    output = _Output()
    thread, stop, seen = _start(project, output)
    try:
        # When a delivery arrives
        status, headers, _ = request(f"{seen['url']}/webhooks/github", b"hello")
        assert status == 202
    finally:
        stop.set()
        thread.join(30)
    key = headers["x-delivery"]
    # Then the console has one readable line for the record and nothing of the metric blob
    [line] = [line for line in output.text.splitlines() if "delivery stored" in line]
    assert "Receiver" in line and "INFO" in line and f"delivery={key}" in line and "{" not in line
    assert "_aws" not in output.text and "cold_start" not in output.text
    assert f"logs:         {log_path(project, seen['port'])}" in output.text
    # And the log file has both, whole, as Lambda would have sent them to CloudWatch
    logged = [json.loads(x) for x in log_path(project, seen["port"]).read_text().splitlines() if x.strip()]
    assert {"level": "INFO", "message": "delivery stored", "delivery": key, "cold_start": True} in logged
    assert any("_aws" in record for record in logged)


def test_the_state_file_gives_jobs_run_locally_the_local_gateway_not_a_deployed_host() -> None:
    # Given the real template's plan and a gateway on a local port
    from types import SimpleNamespace

    plan = LocalPlan.from_template(load_template(REAL_TEMPLATE), base_dir=ROOT)
    stack = SimpleNamespace(
        plan=plan,
        endpoint_url="http://127.0.0.1:5000",
        region=plan.region,
        template_path=REAL_TEMPLATE,
        config_path=ROOT / "lockgate.toml",
        resources={q: f"http://127.0.0.1:5000/123456789012/{q}" for q in plan.queues},
        lambda_api=SimpleNamespace(url="http://127.0.0.1:5001"),
        overrides={"TICKETS_MCP_URL": "http://127.0.0.1:5002/mcp"},  # a stand-in's, over the template's
    )
    gateway = SimpleNamespace(url="http://127.0.0.1:8799", port=8799)
    # When the state file is written
    state = local_state(stack, gateway)  # type: ignore[arg-type]
    # Then the approval digest's links (APPROVAL_BASE_URL) name the local gateway
    jobs = state["functions"]["ScheduledJobsFunction"]["environment"]
    assert jobs["APPROVAL_BASE_URL"] == "http://127.0.0.1:8799/approvals/"
    # And what the stack sets over the template is there too (`lockgate mcp pin` reads an address there)
    assert jobs["TICKETS_MCP_URL"] == "http://127.0.0.1:5002/mcp"
    assert not any(
        "execute-api" in str(v) for f in state["functions"].values() for v in f["environment"].values()
    )


class _Output:
    def __init__(self) -> None:
        self.text = ""

    def write(self, text: str) -> int:
        self.text += text
        return len(text)

    def flush(self) -> None:
        pass


# ------------------------------------------------------------------ the real template: nothing missing


def _declared(template: dict[str, Any], kind: str) -> set[str]:
    return {
        name for name, r in template["Resources"].items() if r.get("Type") == kind and "Condition" not in r
    }


@pytest.mark.skipif(not REAL_TEMPLATE.exists(), reason="template.yaml is not written yet")
def test_given_the_real_template_then_every_table_queue_bucket_secret_route_and_stream_exists_locally():
    template = load_template(REAL_TEMPLATE)
    invoked: list[tuple[str, str]] = []

    def record(function: str, event: dict[str, Any]) -> dict[str, Any]:
        invoked.append((function, event["routeKey"]))
        return {"statusCode": 204}

    with LocalStack(REAL_TEMPLATE) as stack:
        tables = set(stack.client("dynamodb").list_tables()["TableNames"])
        queues = set(stack.client("sqs").list_queues().get("QueueUrls", []))
        buckets = {b["Name"] for b in stack.client("s3").list_buckets()["Buckets"]}
        for logical_id in _declared(template, "AWS::DynamoDB::Table"):
            assert stack.resources[logical_id] in tables, logical_id
        for logical_id in _declared(template, "AWS::SQS::Queue"):
            assert stack.resources[logical_id] in queues, logical_id
        for logical_id in _declared(template, "AWS::S3::Bucket"):
            assert stack.resources[logical_id] in buckets, logical_id
        # Every HttpApi route answers through the gateway and reaches its function.
        expected = []
        for name, resource in template["Resources"].items():
            if resource.get("Type") != "AWS::Serverless::Function":
                continue
            for event in (resource["Properties"].get("Events") or {}).values():
                if event["Type"] == "HttpApi":
                    method, path = event["Properties"]["Method"].upper(), event["Properties"]["Path"]
                    expected.append((name, f"{method} {path}"))
        assert expected, "the template declares no HttpApi route"
        with Gateway(stack.plan.routes, record) as gateway:
            for _, route_key in expected:
                method, path = route_key.split(" ", 1)
                url = gateway.url + path.replace("{", "").replace("}", "").replace("+", "")
                assert request(url, b"" if method != "GET" else None, method=method)[0] == 204, route_key
        assert invoked == expected
        # And every SQS event source has a queue the poller can read.
        for source in stack.plan.sqs_sources:
            assert stack.resources[source.queue] in queues
        # And every DynamoDB stream event source has a table with a stream, and its failures a queue.
        declared_streams = {
            (name, event["Properties"]["Stream"]["Fn::GetAtt"][0])
            for name, resource in template["Resources"].items()
            if resource.get("Type") == "AWS::Serverless::Function"
            for event in (resource["Properties"].get("Events") or {}).values()
            if event["Type"] == "DynamoDB"
        }
        assert {(s.function, s.table) for s in stack.plan.stream_sources} == declared_streams
        for source in stack.plan.stream_sources:
            table = stack.client("dynamodb").describe_table(TableName=stack.resources[source.table])["Table"]
            assert table["StreamSpecification"]["StreamEnabled"], source.table
            if source.on_failure is not None:
                assert stack.resources[source.on_failure] in queues
        # And every secret the template declares exists.
        secrets = {s["Name"] for s in stack.client("secretsmanager").list_secrets()["SecretList"]}
        for logical_id in _declared(template, "AWS::SecretsManager::Secret"):
            assert stack.resources[logical_id] in secrets, logical_id
        # And every schedule runs locally: same expression and input, targeting a function in the plan.
        declared_schedules = {
            name: resource["Properties"]
            for name, resource in template["Resources"].items()
            if resource.get("Type") == "AWS::Scheduler::Schedule"
        }
        assert declared_schedules, "the template declares no schedules"
        planned = {s.name: s for s in stack.plan.schedules}
        for name, properties in declared_schedules.items():
            assert planned[name].expression == properties["ScheduleExpression"], name
            assert planned[name].input == properties["Target"]["Input"], name
            assert planned[name].function in stack.plan.functions, name
            assert planned[name].enabled, name
        # And every schedule (Scheduler resources and Schedule/ScheduleV2 function events) is planned.
        assert_every_schedule_is_planned(template, stack.plan)


def assert_every_schedule_is_planned(template: dict[str, Any], plan: LocalPlan) -> None:
    """Each AWS::Scheduler::Schedule and each function schedule event has its local schedule."""
    planned = {(s.origin, s.function, s.expression) for s in plan.schedules}
    for logical_id in _declared(template, "AWS::Scheduler::Schedule"):
        properties = template["Resources"][logical_id]["Properties"]
        target = properties["Target"]["Arn"]["Fn::GetAtt"][0]
        assert (logical_id, target, properties["ScheduleExpression"]) in planned, logical_id
    for name in _declared(template, "AWS::Serverless::Function"):
        for event in (template["Resources"][name]["Properties"].get("Events") or {}).values():
            if event["Type"] in ("Schedule", "ScheduleV2"):
                key = "ScheduleExpression" if event["Type"] == "ScheduleV2" else "Schedule"
                assert any(f == name and e == event["Properties"][key] for _, f, e in planned), name


def test_given_a_template_with_schedules_then_the_check_finds_each_and_fails_on_a_missing_one(tmp_path):
    # Given a template with a Scheduler schedule and a ScheduleV2 event on one function
    template = load_template_text(
        """
        Resources:
          Jobs:
            Type: AWS::Serverless::Function
            Properties:
              CodeUri: jobs/
              Handler: app.handler
              Runtime: python3.13
              Events:
                Nightly:
                  Type: ScheduleV2
                  Properties: {ScheduleExpression: "cron(0 3 * * ? *)"}
          SweepSchedule:
            Type: AWS::Scheduler::Schedule
            Properties:
              ScheduleExpression: rate(5 minutes)
              ScheduleExpressionTimezone: UTC
              FlexibleTimeWindow: {Mode: "OFF"}
              Target:
                Arn: !GetAtt Jobs.Arn
                RoleArn: arn:aws:iam::123456789012:role/x
                Input: '{"job": "sweep"}'
        """,
        tmp_path,
    )
    plan = LocalPlan.from_template(template, base_dir=tmp_path)
    # Then both are planned, with their function and input
    assert_every_schedule_is_planned(template, plan)
    assert {(s.function, s.input) for s in plan.schedules} == {("Jobs", None), ("Jobs", '{"job": "sweep"}')}
    # And a plan that lost one fails the check
    lost = LocalPlan(endpoint_url=plan.endpoint_url, functions=plan.functions, schedules=plan.schedules[:1])
    with pytest.raises(AssertionError):
        assert_every_schedule_is_planned(template, lost)


def load_template_text(text: str, folder: Path) -> dict[str, Any]:
    path = folder / "template.yaml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    (folder / "jobs").mkdir(exist_ok=True)
    return load_template(path)


def test_the_cli_asks_which_local_stack_when_several_run_and_finds_the_one_named(tmp_path: Path) -> None:
    from lockgate_infra.cli.targets import TargetError, local_target

    # Given two local stacks described in one checkout
    for port in (8787, 8788):
        state = {"pid": os.getpid(), "port": port, "endpoint_url": f"http://127.0.0.1:{port + 100}",
                 "gateway_url": f"http://127.0.0.1:{port}",
                 "resources": {"InboxTable": f"t{port}"}}  # fmt: skip
        state_path(tmp_path, port).parent.mkdir(parents=True, exist_ok=True)
        state_path(tmp_path, port).write_text(json.dumps(state))
    # Then a command that names none is told how to choose, and one that names a port gets that one
    with pytest.raises(TargetError, match=r"2 local stacks are running \(gateway ports 8787, 8788\)"):
        local_target(tmp_path)
    target = local_target(tmp_path, 8788)
    assert target.endpoint_url == "http://127.0.0.1:8888" and target.name("InboxTable") == "t8788"
    with pytest.raises(TargetError, match="no local stack is running on port 9999"):
        local_target(tmp_path, 9999)
