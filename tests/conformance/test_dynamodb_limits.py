"""DynamoDB limits Lockgate designs around: TTL is not immediate, items stop at 400 KB, a batch
read takes at most 100 keys."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from botocore.exceptions import ClientError

from tests.conformance.conftest import Table

TTL = "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/howitworks-ttl.html"
QUOTAS = "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html"
BATCH_GET_ITEM = "https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_BatchGetItem.html"


def test_an_expired_item_is_still_read_until_ttl_deletes_it(make_table: Callable[..., Table]) -> None:
    """AWS (Time to Live): deletion happens in the background, typically within a few days;
    "items that have expired, but haven't yet been deleted by TTL, still appear in reads, queries,
    and scans". Lockgate's stores compare expiry times themselves instead of trusting TTL."""
    table = make_table()
    table.db.update_time_to_live(
        TableName=table.name, TimeToLiveSpecification={"Enabled": True, "AttributeName": "expires_at"}
    )
    an_hour_ago = str(int(time.time()) - 3600)
    table.db.put_item(TableName=table.name, Item={"pk": {"S": "lease"}, "expires_at": {"N": an_hour_ago}})

    assert table.get("lease") == {"pk": {"S": "lease"}, "expires_at": {"N": an_hour_ago}}
    assert table.db.scan(TableName=table.name, ConsistentRead=True)["Count"] == 1


def test_an_item_over_400_kb_is_refused(make_table: Callable[..., Table]) -> None:
    """AWS (Quotas, "Item size": 400 KB including attribute names): a larger item is a
    ValidationException and is not written. Lockgate keeps big bodies in S3 with a pointer."""
    table = make_table()

    with pytest.raises(ClientError) as caught:
        table.db.put_item(TableName=table.name, Item={"pk": {"S": "big"}, "body": {"S": "x" * 410_000}})

    assert caught.value.response["Error"]["Code"] == "ValidationException"
    assert table.get("big") is None


def test_a_batch_read_takes_at_most_100_keys(make_table: Callable[..., Table]) -> None:
    """AWS (BatchGetItem): "as many as 100 items"; more is a ValidationException. Missing keys are
    simply absent from Responses. Lockgate reads in chunks of 100 (lockgate.dynamo.read_keys)."""
    table = make_table()
    table.db.put_item(TableName=table.name, Item={"pk": {"S": "k-0"}})
    keys = [{"pk": {"S": f"k-{n}"}} for n in range(101)]

    with pytest.raises(ClientError) as caught:
        table.db.batch_get_item(RequestItems={table.name: {"Keys": keys}})
    got = table.db.batch_get_item(RequestItems={table.name: {"Keys": keys[:100], "ConsistentRead": True}})

    assert caught.value.response["Error"]["Code"] == "ValidationException"
    assert got["Responses"][table.name] == [{"pk": {"S": "k-0"}}]
