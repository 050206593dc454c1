"""DynamoDB single-item writes: the conditions and return values every Lockgate store relies on.

The inbox's store-first receipt, the lease, the operation ledger, the rate limiter and the
breaker are each one conditional write that reads the old item only when its condition fails.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.conformance.conftest import Table

PUT_ITEM = "https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_PutItem.html"
UPDATE_ITEM = "https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_UpdateItem.html"
CONDITIONS = (
    "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Expressions.ConditionExpressions.html"
)


def code(error: ClientError) -> str:
    return str(error.response["Error"]["Code"])


def test_a_conditional_put_on_an_existing_item_fails_and_leaves_it_unchanged(
    make_table: Callable[..., Table],
) -> None:
    """AWS (PutItem, ConditionExpression; Condition expressions): a put whose condition is false
    fails with ConditionalCheckFailedException and does not write. Lockgate: receipt, leases."""
    table = make_table()
    table.db.put_item(TableName=table.name, Item={"pk": {"S": "d-1"}, "status": {"S": "received"}})

    with pytest.raises(ClientError) as caught:
        table.db.put_item(
            TableName=table.name,
            Item={"pk": {"S": "d-1"}, "status": {"S": "overwritten"}},
            ConditionExpression="attribute_not_exists(pk)",
        )

    assert code(caught.value) == "ConditionalCheckFailedException"
    assert table.get("d-1") == {"pk": {"S": "d-1"}, "status": {"S": "received"}}


def test_a_failed_condition_returns_the_old_item_when_asked(make_table: Callable[..., Table]) -> None:
    """AWS (PutItem, ReturnValuesOnConditionCheckFailure): with ALL_OLD, a failed condition
    returns the item as it was, so a duplicate costs no second read. Lockgate: every store."""
    table = make_table()
    table.db.put_item(TableName=table.name, Item={"pk": {"S": "d-1"}, "attempts": {"N": "2"}})

    with pytest.raises(ClientError) as caught:
        table.db.put_item(
            TableName=table.name,
            Item={"pk": {"S": "d-1"}},
            ConditionExpression="attribute_not_exists(pk)",
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )

    assert caught.value.response["Item"] == {"pk": {"S": "d-1"}, "attempts": {"N": "2"}}


def test_an_update_creates_a_missing_item_and_returns_it_whole(make_table: Callable[..., Table]) -> None:
    """AWS (UpdateItem): "Edits an existing item's attributes, or adds a new item to the table if
    it does not already exist"; ADD on a missing number starts from 0; ALL_NEW returns the whole
    item after the update. Lockgate: counters (spend, rate-limit buckets), runs."""
    table = make_table()

    first = table.db.update_item(
        TableName=table.name,
        Key={"pk": {"S": "spend#2026-12-01"}},
        UpdateExpression="ADD spent :cost SET currency = :usd",
        ExpressionAttributeValues={":cost": {"N": "5"}, ":usd": {"S": "USD"}},
        ReturnValues="ALL_NEW",
    )
    second = table.db.update_item(
        TableName=table.name,
        Key={"pk": {"S": "spend#2026-12-01"}},
        UpdateExpression="ADD spent :cost",
        ExpressionAttributeValues={":cost": {"N": "3"}},
        ReturnValues="UPDATED_NEW",
    )

    assert first["Attributes"] == {
        "pk": {"S": "spend#2026-12-01"},
        "spent": {"N": "5"},
        "currency": {"S": "USD"},
    }
    assert second["Attributes"] == {"spent": {"N": "8"}}
    assert table.get("spend#2026-12-01") == {
        "pk": {"S": "spend#2026-12-01"},
        "spent": {"N": "8"},
        "currency": {"S": "USD"},
    }


def test_an_update_conditioned_on_the_item_existing_creates_nothing(make_table: Callable[..., Table]) -> None:
    """AWS (Condition expressions, attribute_exists): the condition is evaluated against the item
    as it is; no item means attribute_exists is false, and nothing is written. Lockgate: a late
    worker's finish, a lease renewal."""
    table = make_table()

    with pytest.raises(ClientError) as caught:
        table.db.update_item(
            TableName=table.name,
            Key={"pk": {"S": "gone"}},
            UpdateExpression="SET #s = :done",
            ConditionExpression="attribute_exists(pk) AND #o = :me",
            ExpressionAttributeNames={"#s": "status", "#o": "owner"},
            ExpressionAttributeValues={":done": {"S": "done"}, ":me": {"S": "worker-1"}},
        )

    assert code(caught.value) == "ConditionalCheckFailedException"
    assert table.get("gone") is None


def test_a_conditional_delete_removes_only_what_it_expects(make_table: Callable[..., Table]) -> None:
    """AWS (DeleteItem, ConditionExpression): a delete whose condition is false fails and keeps the
    item; a true one removes it. Lockgate: releasing a lease only as its owner."""
    table = make_table()
    table.db.put_item(TableName=table.name, Item={"pk": {"S": "lease#sweep"}, "owner": {"S": "a"}})

    def release(owner: str) -> None:
        table.db.delete_item(
            TableName=table.name,
            Key={"pk": {"S": "lease#sweep"}},
            ConditionExpression="#o = :me",
            ExpressionAttributeNames={"#o": "owner"},
            ExpressionAttributeValues={":me": {"S": owner}},
        )

    with pytest.raises(ClientError) as caught:
        release("b")
    assert code(caught.value) == "ConditionalCheckFailedException"
    assert table.get("lease#sweep") is not None
    release("a")
    assert table.get("lease#sweep") is None


def test_of_concurrent_conditional_updates_exactly_one_wins(make_table: Callable[..., Table]) -> None:
    """AWS (Condition expressions; Working with items, "conditional writes"): a conditional write
    is checked and applied as one step, so of many writers racing on one key exactly one
    succeeds. Lockgate: one lease holder, one ledger entry, one decision. (moto alone let 2-3 of
    8 writers win most rounds; ``local.fidelity`` makes each request atomic.)"""
    table = make_table()
    clients = [table.cloud.client("dynamodb") for _ in range(8)]  # a session is not thread-safe

    def round_of_claims(lease: str) -> list[str]:
        outcomes: list[str] = []
        start = threading.Barrier(len(clients))

        def claim(n: int) -> None:
            start.wait()
            try:
                clients[n].update_item(
                    TableName=table.name,
                    Key={"pk": {"S": lease}},
                    UpdateExpression="SET #o = :me",
                    ConditionExpression="attribute_not_exists(#o)",
                    ExpressionAttributeNames={"#o": "owner"},
                    ExpressionAttributeValues={":me": {"S": f"w{n}"}},
                )
                outcomes.append(f"w{n}")
            except ClientError as error:
                outcomes.append(code(error))

        threads = [threading.Thread(target=claim, args=(n,)) for n in range(len(clients))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return outcomes

    for lease in (f"lease#{n}" for n in range(5)):
        outcomes = round_of_claims(lease)
        winners = [o for o in outcomes if o.startswith("w")]
        assert len(winners) == 1, (lease, outcomes)
        assert outcomes.count("ConditionalCheckFailedException") == len(clients) - 1
        stored: Any = table.get(lease)
        assert stored["owner"]["S"] == winners[0]
