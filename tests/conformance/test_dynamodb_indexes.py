"""Global secondary indexes with a multi-attribute partition key: the sharded indexes Lockgate's
inbox and ledger are listed through (``lockgate/index_shards.py``)."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.conformance.conftest import Cloud

GSI = "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.html"
MULTI_ATTRIBUTE = "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.DesignPattern.MultiAttributeKeys.html"


def _sharded_table(cloud: Cloud) -> tuple[Any, str]:
    db, name = cloud.client("dynamodb"), cloud.unique("table")
    attributes = [("pk", "S"), ("status", "S"), ("index_shard", "N"), ("received_at", "N")]
    db.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": a, "AttributeType": t} for a, t in attributes],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "by-status-sharded",
                "KeySchema": [
                    {"AttributeName": "status", "KeyType": "HASH"},
                    {"AttributeName": "index_shard", "KeyType": "HASH"},
                    {"AttributeName": "received_at", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    cloud.cleanups.append(lambda: db.delete_table(TableName=name))
    db.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 1, "MaxAttempts": 120})
    return db, name


def _put(db: Any, table: str, pk: str, status: str, at: int, shard: int | None) -> None:
    item = {"pk": {"S": pk}, "status": {"S": status}, "received_at": {"N": str(at)}}
    if shard is not None:
        item["index_shard"] = {"N": str(shard)}
    db.put_item(TableName=table, Item=item)


def _in_shard(db: Any, table: str, status: str, shard: int, before: int | None = None) -> list[str]:
    condition = "#s = :s AND index_shard = :h" + (" AND received_at < :b" if before is not None else "")
    values = {":s": {"S": status}, ":h": {"N": str(shard)}}
    if before is not None:
        values[":b"] = {"N": str(before)}
    found = db.query(
        TableName=table,
        IndexName="by-status-sharded",
        KeyConditionExpression=condition,
        ExpressionAttributeNames={"#s": "status"},
        ExpressionAttributeValues=values,
    )
    return [item["pk"]["S"] for item in found["Items"]]


def test_a_query_names_every_partition_attribute_and_finds_only_that_partition(cloud: Cloud) -> None:
    """AWS (multi-attribute keys pattern): a GSI partition key may be up to four attributes that
    DynamoDB hashes together; a query gives each of them with ``=`` and may narrow the sort key.
    A query that leaves one out is refused. Lockgate asks each of the 16 shards of a status."""
    db, table = _sharded_table(cloud)
    _put(db, table, "a", "received", 10, 3)
    _put(db, table, "b", "received", 20, 3)
    _put(db, table, "c", "received", 30, 4)
    _put(db, table, "d", "done", 40, 3)

    assert cloud.eventually(lambda: _in_shard(db, table, "received", 3) or None, "shard 3") == ["a", "b"]
    assert _in_shard(db, table, "received", 3, before=20) == ["a"]
    assert cloud.eventually(lambda: _in_shard(db, table, "received", 4) or None, "shard 4") == ["c"]
    with pytest.raises(ClientError) as refused:
        db.query(
            TableName=table,
            IndexName="by-status-sharded",
            KeyConditionExpression="#s = :s",
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues={":s": {"S": "received"}},
        )
    assert refused.value.response["Error"]["Code"] == "ValidationException"


def test_an_item_without_every_key_attribute_is_not_in_the_index(cloud: Cloud) -> None:
    """AWS (Using Global Secondary Indexes, sparse indexes): an item is written to an index only
    if it has every attribute of the index's key. So an inbox item stored before the index was
    sharded (no ``index_shard``) is listed only once ``lockgate upgrade indexes`` gives it one."""
    db, table = _sharded_table(cloud)
    _put(db, table, "old", "received", 10, None)
    _put(db, table, "new", "received", 20, 0)

    assert cloud.eventually(lambda: _in_shard(db, table, "received", 0) or None, "the new one") == ["new"]
    db.update_item(
        TableName=table,
        Key={"pk": {"S": "old"}},
        UpdateExpression="SET index_shard = :h",
        ExpressionAttributeValues={":h": {"N": "0"}},
    )
    listed = cloud.eventually(
        lambda: found if len(found := _in_shard(db, table, "received", 0)) == 2 else None, "both"
    )
    assert listed == ["old", "new"]


def test_a_changed_status_moves_the_entry_to_that_status_partition(cloud: Cloud) -> None:
    """AWS (Using Global Secondary Indexes, "Data synchronization"): when an index key attribute of
    an item changes, DynamoDB deletes the old entry and writes the new one. A delivery's status
    changes while its shard stays: it leaves ``received`` and is listed under ``done``."""
    db, table = _sharded_table(cloud)
    _put(db, table, "a", "received", 10, 5)
    cloud.eventually(lambda: _in_shard(db, table, "received", 5) or None, "received")

    db.update_item(
        TableName=table,
        Key={"pk": {"S": "a"}},
        UpdateExpression="SET #s = :done",
        ExpressionAttributeNames={"#s": "status"},
        ExpressionAttributeValues={":done": {"S": "done"}},
    )

    assert cloud.eventually(lambda: _in_shard(db, table, "done", 5) or None, "done") == ["a"]
    assert cloud.eventually(lambda: _in_shard(db, table, "received", 5) == [] or None, "gone")
