"""DynamoDB Streams: a record for each committed change, in order per item, and for nothing else.

The approval notifier and the executor are stream consumers: a phantom record notifies a
reviewer of a proposal that does not exist, and a stranded reader stops notifying anyone.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from botocore.exceptions import ClientError

from tests.conformance.conftest import Table
from tests.conformance.streams import StreamReader, summary

STREAMS = "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Streams.html"
TRANSACT_WRITE_ITEMS = (
    "https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_TransactWriteItems.html"
)


@pytest.fixture
def streamed(make_table: Callable[..., Table]) -> Table:
    return make_table(stream="NEW_AND_OLD_IMAGES")


def test_each_change_of_an_item_is_one_record_in_the_order_made(streamed: Table) -> None:
    """AWS (Change data capture for DynamoDB Streams): "Each stream record appears exactly once in
    the stream" and "for each item that is modified ..., the stream records appear in the same
    sequence as the actual modifications to the item", with the images the view type names."""
    reader = StreamReader(streamed)
    db, name = streamed.db, streamed.name

    db.put_item(TableName=name, Item={"pk": {"S": "p-1"}, "status": {"S": "pending"}})
    db.update_item(
        TableName=name,
        Key={"pk": {"S": "p-1"}},
        UpdateExpression="SET #s = :a",
        ExpressionAttributeNames={"#s": "status"},
        ExpressionAttributeValues={":a": {"S": "approved"}},
    )
    db.delete_item(TableName=name, Key={"pk": {"S": "p-1"}})
    records = reader.mark("marker")

    assert summary(records) == [("INSERT", "p-1"), ("MODIFY", "p-1"), ("REMOVE", "p-1")]
    insert, modify, remove = (r["dynamodb"] for r in records)
    assert "OldImage" not in insert and insert["NewImage"]["status"] == {"S": "pending"}
    assert modify["OldImage"]["status"] == {"S": "pending"} and modify["NewImage"]["status"] == {
        "S": "approved"
    }
    assert remove["OldImage"]["status"] == {"S": "approved"} and "NewImage" not in remove
    numbers = [int(r["dynamodb"]["SequenceNumber"]) for r in records]
    assert numbers == sorted(numbers)


def test_an_update_that_creates_its_item_is_one_insert_with_the_whole_item(streamed: Table) -> None:
    """AWS (Streams; UpdateItem adds the item if it does not exist): one modification, one record:
    an INSERT whose new image is the item as written (moto wrote a second, key-only INSERT)."""
    reader = StreamReader(streamed)

    streamed.db.update_item(
        TableName=streamed.name,
        Key={"pk": {"S": "run-1"}},
        UpdateExpression="SET steps = :n",
        ExpressionAttributeValues={":n": {"N": "1"}},
    )
    records = reader.mark("marker")

    assert summary(records) == [("INSERT", "run-1")]
    assert records[0]["dynamodb"]["NewImage"] == {"pk": {"S": "run-1"}, "steps": {"N": "1"}}


def test_writes_that_change_nothing_emit_nothing(streamed: Table) -> None:
    """AWS (Streams): "If you perform a PutItem or UpdateItem operation that does not change any
    data in an item, DynamoDB Streams does not write a stream record for that operation"; a failed
    conditional write and a delete of a missing item change nothing either."""
    db, name = streamed.db, streamed.name
    db.put_item(TableName=name, Item={"pk": {"S": "d-1"}, "n": {"N": "1"}})
    reader = StreamReader(streamed)
    reader.mark("before")

    db.put_item(TableName=name, Item={"pk": {"S": "d-1"}, "n": {"N": "1"}})
    db.update_item(
        TableName=name,
        Key={"pk": {"S": "d-1"}},
        UpdateExpression="SET n = :one",
        ExpressionAttributeValues={":one": {"N": "1"}},
    )
    with pytest.raises(ClientError):
        db.put_item(TableName=name, Item={"pk": {"S": "d-1"}}, ConditionExpression="attribute_not_exists(pk)")
    db.delete_item(TableName=name, Key={"pk": {"S": "never-written"}})

    assert reader.mark("after") == []


def test_a_committed_transaction_emits_one_record_per_item(streamed: Table) -> None:
    """AWS (TransactWriteItems; Streams): a committed transaction's writes are ordinary changes,
    one stream record each."""
    reader = StreamReader(streamed)

    streamed.db.transact_write_items(
        TransactItems=[
            {"Put": {"TableName": streamed.name, "Item": {"pk": {"S": "p-1"}}}},
            {"Put": {"TableName": streamed.name, "Item": {"pk": {"S": "slot#A-1"}}}},
        ]
    )
    records = reader.mark("marker")

    assert sorted(summary(records)) == [("INSERT", "p-1"), ("INSERT", "slot#A-1")]


def test_a_cancelled_transaction_emits_nothing_and_strands_no_reader(streamed: Table) -> None:
    """AWS (TransactWriteItems: "either all of them succeed or none of them do"; Streams: records
    are written for modifications): a cancelled transaction modified nothing, so no record, and a
    reader opened before it goes on seeing later writes. (moto emitted the cancelled writes to
    the readers already open and then never showed them another record.)"""
    db, name = streamed.db, streamed.name
    early = StreamReader(streamed, "LATEST")
    db.put_item(TableName=name, Item={"pk": {"S": "slot"}})
    assert summary(early.mark("opened")) == [("INSERT", "slot")]

    for attempt in range(3):  # a stranded reader shows on the second cancellation too
        with pytest.raises(ClientError) as caught:
            db.transact_write_items(
                TransactItems=[
                    {"Put": {"TableName": name, "Item": {"pk": {"S": f"proposal-{attempt}"}}}},
                    {
                        "Put": {
                            "TableName": name,
                            "Item": {"pk": {"S": "slot"}},
                            "ConditionExpression": "attribute_not_exists(pk)",
                        }
                    },
                ]
            )
        assert caught.value.response["Error"]["Code"] == "TransactionCanceledException"
        db.put_item(TableName=name, Item={"pk": {"S": f"after-{attempt}"}})
        assert summary(early.mark(f"marker-{attempt}")) == [("INSERT", f"after-{attempt}")]

    late = StreamReader(streamed)
    assert summary(late.mark("last")) == [
        ("INSERT", "slot"),
        ("INSERT", "opened"),
        *[(e, k) for n in range(3) for e, k in (("INSERT", f"after-{n}"), ("INSERT", f"marker-{n}"))],
    ]
