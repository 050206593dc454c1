"""The local stack runs DynamoDB stream event sources: a table's changes reach a function as
Lambda's stream event, a reported failure is redelivered, and a batch that keeps failing is
given up into its on-failure queue.

A tiny template and handler under tmp_path stand in for the approval notifier.
"""

from __future__ import annotations

import json
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lockgate_infra.local.stack import LocalStack
from lockgate_infra.local.streams import stream_record

TEMPLATE = """
AWSTemplateFormatVersion: "2010-09-09"
Transform: AWS::Serverless-2016-10-31
Resources:
  ProposalsTable:
    Type: AWS::DynamoDB::Table
    Properties:
      BillingMode: PAY_PER_REQUEST
      AttributeDefinitions: [{AttributeName: id, AttributeType: S}]
      KeySchema: [{AttributeName: id, KeyType: HASH}]
      StreamSpecification: {StreamViewType: NEW_IMAGE}
  SeenTable:
    Type: AWS::DynamoDB::Table
    Properties:
      BillingMode: PAY_PER_REQUEST
      AttributeDefinitions: [{AttributeName: pk, AttributeType: S}]
      KeySchema: [{AttributeName: pk, KeyType: HASH}]
  NotifyDLQ:
    Type: AWS::SQS::Queue
  Api:
    Type: AWS::Serverless::HttpApi
  Notifier:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: functions/notifier/
      Handler: app.handler
      Timeout: 10
      Environment:
        Variables:
          SEEN_TABLE: !Ref SeenTable
          BASE_URL: !Sub "https://${Api}.execute-api.${AWS::Region}.${AWS::URLSuffix}/approvals/"
      Events:
        Proposals:
          Type: DynamoDB
          Properties:
            Stream: !GetAtt ProposalsTable.StreamArn
            StartingPosition: LATEST
            BatchSize: 10
            FunctionResponseTypes: [ReportBatchItemFailures]
            MaximumRetryAttempts: 2
            BisectBatchOnFunctionError: true
            DestinationConfig:
              OnFailure:
                Type: SQS
                Destination: !GetAtt NotifyDLQ.Arn
  Page:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: functions/notifier/
      Handler: app.page
      Events:
        Page: {Type: HttpApi, Properties: {ApiId: !Ref Api, Path: "/approvals/{id}", Method: GET}}
"""

# Records every record it sees (with the attempt number) and fails as the item asks:
# "fail-once" fails its first delivery, "fail-always" every one.
HANDLER = """
import json, os
import boto3

dynamodb = boto3.client("dynamodb")


def handler(event, context):
    failures = []
    for record in event["Records"]:
        image = record["dynamodb"]["NewImage"]
        item_id = image["id"]["S"]
        attempt = dynamodb.update_item(
            TableName=os.environ["SEEN_TABLE"], Key={"pk": {"S": "attempts#" + item_id}},
            UpdateExpression="ADD n :one", ExpressionAttributeValues={":one": {"N": "1"}},
            ReturnValues="UPDATED_NEW",
        )["Attributes"]["n"]["N"]
        dynamodb.put_item(TableName=os.environ["SEEN_TABLE"], Item={
            "pk": {"S": item_id + "#" + attempt},
            "record": {"S": json.dumps(record)},
            "base_url": {"S": os.environ["BASE_URL"]},
        })
        mode = image.get("mode", {}).get("S", "")
        if mode == "fail-always" or (mode == "fail-once" and attempt == "1"):
            failures.append({"itemIdentifier": record["dynamodb"]["SequenceNumber"]})
    return {"batchItemFailures": failures}


def page(event, context):
    return {"statusCode": 200, "body": os.environ["BASE_URL"]}
"""


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[LocalStack]:
    (tmp_path / "template.yaml").write_text(TEMPLATE, encoding="utf-8")
    (tmp_path / "lockgate.toml").write_text("", encoding="utf-8")
    folder = tmp_path / "functions" / "notifier"
    folder.mkdir(parents=True)
    (folder / "app.py").write_text(textwrap.dedent(HANDLER), encoding="utf-8")
    with LocalStack(tmp_path / "template.yaml") as running:
        running.start_gateway()
        running.start_pollers(wait_seconds=0)
        yield running


def put_proposal(stack: LocalStack, item_id: str, mode: str = "") -> None:
    item = {"id": {"S": item_id}, "amount": {"N": "42"}, "blob": {"B": b"\x00\x01"}}
    if mode:
        item["mode"] = {"S": mode}
    stack.client("dynamodb").put_item(TableName=stack.resources["ProposalsTable"], Item=item)


def seen(stack: LocalStack) -> dict[str, dict[str, Any]]:
    items = stack.client("dynamodb").scan(TableName=stack.resources["SeenTable"], ConsistentRead=True)[
        "Items"
    ]
    return {
        item["pk"]["S"]: {**json.loads(item["record"]["S"]), "base_url": item["base_url"]["S"]}
        for item in items
        if "record" in item
    }


def test_given_an_insert_then_the_function_gets_a_lambda_stream_record_with_the_new_image(stack):
    put_proposal(stack, "a-1")
    assert stack.drain(timeout=10)
    (record,) = seen(stack).values()
    assert record["eventName"] == "INSERT"
    assert record["eventSource"] == "aws:dynamodb"
    table_arn = stack.client("dynamodb").describe_table(TableName=stack.resources["ProposalsTable"])["Table"]
    assert record["eventSourceARN"] == table_arn["LatestStreamArn"]
    change = record["dynamodb"]
    assert change["Keys"] == {"id": {"S": "a-1"}}
    assert change["NewImage"] == {"id": {"S": "a-1"}, "amount": {"N": "42"}, "blob": {"B": "AAE="}}
    assert change["StreamViewType"] == "NEW_IMAGE"
    assert isinstance(change["SequenceNumber"], str) and change["SequenceNumber"].isdigit()
    assert isinstance(change["ApproximateCreationDateTime"], int)
    # The function's API URL is the local gateway's (the template names the deployed one).
    assert stack.gateway is not None
    assert record["base_url"] == f"{stack.gateway.url}/approvals/"
    (poller,) = stack.stream_pollers
    assert (poller.invocations, poller.dropped) == (1, 0)


def test_given_a_reported_failure_then_that_record_and_those_after_it_are_redelivered(stack):
    put_proposal(stack, "ok-1")
    put_proposal(stack, "flaky", "fail-once")
    put_proposal(stack, "ok-2")
    time.sleep(0.2)  # typically one batch of three
    assert stack.drain(timeout=10)
    rows = seen(stack)
    # the failed record came again, once, and then succeeded
    assert {"flaky#1", "flaky#2"} <= set(rows)
    assert "flaky#3" not in rows
    assert rows["flaky#2"]["dynamodb"]["SequenceNumber"] == rows["flaky#1"]["dynamodb"]["SequenceNumber"]
    # what succeeded before the failure is never delivered again
    assert "ok-1#2" not in rows
    (poller,) = stack.stream_pollers
    assert poller.dropped == 0
    dead = stack.client("sqs").receive_message(QueueUrl=stack.resources["NotifyDLQ"], WaitTimeSeconds=0)
    assert "Messages" not in dead


def test_given_a_record_that_keeps_failing_then_it_is_retried_up_to_the_cap_and_recorded_in_the_dlq(
    stack, caplog
):
    put_proposal(stack, "doomed", "fail-always")
    assert stack.drain(timeout=10)
    put_proposal(stack, "after")  # the stream moves on
    assert stack.drain(timeout=10)
    rows = seen(stack)
    # the first delivery and MaximumRetryAttempts (2) retries, then given up
    assert {pk for pk in rows if pk.startswith("doomed#")} == {"doomed#1", "doomed#2", "doomed#3"}
    assert "after#1" in rows
    (poller,) = stack.stream_pollers
    assert poller.dropped == 1
    assert "giving up 1 record(s)" in caplog.text
    (message,) = stack.client("sqs").receive_message(QueueUrl=stack.resources["NotifyDLQ"])["Messages"]
    failure = json.loads(message["Body"])
    assert failure["requestContext"]["condition"] == "RetryAttemptsExhausted"
    assert failure["requestContext"]["functionArn"].endswith(":function:lockgate-local-Notifier")
    info = failure["DDBStreamBatchInfo"]
    assert info["batchSize"] == 1
    assert info["startSequenceNumber"] == rows["doomed#1"]["dynamodb"]["SequenceNumber"]
    assert info["streamArn"] == rows["doomed#1"]["eventSourceARN"]


def test_given_the_gateway_then_an_api_url_in_a_routes_environment_is_the_gateways(stack):
    import urllib.request

    assert stack.gateway is not None
    with urllib.request.urlopen(f"{stack.gateway.url}/approvals/x", timeout=10) as response:  # noqa: S310
        assert response.read().decode() == f"{stack.gateway.url}/approvals/"


def test_given_a_binary_set_and_nested_values_then_the_record_encodes_them_as_lambda_does():
    import datetime

    record = {
        "eventID": "e1",
        "eventName": "MODIFY",
        "awsRegion": "us-east-1",
        "dynamodb": {
            "Keys": {"id": {"S": "k"}},
            "NewImage": {"m": {"M": {"b": {"B": b"\xff"}}}, "l": {"L": [{"BS": [b"\x01"]}]}},
            "SequenceNumber": "7",
            "StreamViewType": "NEW_IMAGE",
            "ApproximateCreationDateTime": datetime.datetime(2025, 1, 1, tzinfo=datetime.UTC),
        },
    }
    out = stream_record(record, "arn:stream", "us-east-1")
    assert out["dynamodb"]["NewImage"] == {"m": {"M": {"b": {"B": "/w=="}}}, "l": {"L": [{"BS": ["AQ=="]}]}}
    assert out["dynamodb"]["ApproximateCreationDateTime"] == 1735689600
    assert (out["eventName"], out["eventSourceARN"], out["eventVersion"]) == ("MODIFY", "arn:stream", "1.1")
