"""The tests' moto account: template.yaml's resources, each created when a call first names it."""

from __future__ import annotations

import json

import boto3

from tests.support import Aws


def test_given_a_test_that_uses_one_table_then_only_that_table_and_the_queues_exist(aws: Aws) -> None:
    # When a test reads its inbox table
    assert aws.inbox_items() == []
    # Then that table exists, with its TTL, and no other table of the template was created
    db = aws.client("dynamodb")
    assert db.list_tables()["TableNames"] == [aws.inbox_table]
    ttl = db.describe_time_to_live(TableName=aws.inbox_table)["TimeToLiveDescription"]
    assert ttl == {"TimeToLiveStatus": "ENABLED", "AttributeName": "ttl"}
    # And the queues are there from the start, the inbox queue redriving to its DLQ
    attributes = aws.client("sqs").get_queue_attributes(
        QueueUrl=aws.queue_url, AttributeNames=["RedrivePolicy"]
    )
    redrive = json.loads(attributes["Attributes"]["RedrivePolicy"])
    assert (
        redrive["deadLetterTargetArn"].endswith(":lockgate-local-InboxDLQ") and redrive["maxReceiveCount"] > 1
    )


def test_given_a_transaction_or_a_batch_read_then_every_table_it_names_is_created_first(aws: Aws) -> None:
    # Given a client the code under test built from its own session, not the test's
    db = boto3.session.Session(region_name="us-east-1").client("dynamodb")
    approvals, state = aws.names["ApprovalsTable"], aws.state_table
    # When its first call is a transaction over two tables, then a batch read of a third
    db.transact_write_items(
        TransactItems=[
            {"Put": {"TableName": approvals, "Item": {"approval_id": {"S": "ap_1"}}}},
            {"Put": {"TableName": state, "Item": {"pk": {"S": "x"}, "sk": {"S": "y"}}}},
        ]
    )
    got = db.batch_get_item(
        RequestItems={
            aws.names["DecisionsTable"]: {"Keys": [{"approval_id": {"S": "ap_1"}, "reviewer": {"S": "r"}}]}
        }
    )
    # Then all three exist, the writes landed, and the read found nothing
    assert set(db.list_tables()["TableNames"]) == {approvals, state, aws.names["DecisionsTable"]}
    assert db.get_item(TableName=state, Key={"pk": {"S": "x"}, "sk": {"S": "y"}})["Item"]["sk"] == {"S": "y"}
    assert got["Responses"][aws.names["DecisionsTable"]] == []
