"""DynamoDB transactions: all or nothing, with a reason per action when cancelled.

Lockgate writes a proposal and its pending-limit slots in one transaction, and admits a run's
models against the day's counters in one; a cancelled one must leave no trace anywhere.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.conformance.conftest import Table

TRANSACT_WRITE_ITEMS = (
    "https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_TransactWriteItems.html"
)
CANCELLATION_REASON = (
    "https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_CancellationReason.html"
)


def put(table: Table, pk: str, *, condition: str | None = None, **attributes: str) -> dict[str, Any]:
    action: dict[str, Any] = {
        "TableName": table.name,
        "Item": {"pk": {"S": pk}, **{k: {"S": v} for k, v in attributes.items()}},
    }
    if condition:
        action["ConditionExpression"] = condition
        action["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
    return {"Put": action}


def test_a_cancelled_transaction_writes_nothing_and_says_why_per_action(
    make_table: Callable[..., Table],
) -> None:
    """AWS (TransactWriteItems): "either all of them succeed or none of them do"; (CancellationReason)
    the reasons are "ordered according to the ordering of the TransactWriteItems request", "None"
    where the action was fine, and the old item where ALL_OLD was asked for."""
    proposals, slots = make_table(), make_table()
    slots.db.put_item(TableName=slots.name, Item={"pk": {"S": "order#A-1"}, "held_by": {"S": "p-1"}})

    with pytest.raises(ClientError) as caught:
        proposals.db.transact_write_items(
            TransactItems=[
                put(proposals, "p-2", summary="refund $80"),
                put(slots, "order#A-1", condition="attribute_not_exists(pk)", held_by="p-2"),
            ]
        )

    error = caught.value.response
    assert error["Error"]["Code"] == "TransactionCanceledException"
    reasons = error["CancellationReasons"]
    assert [r["Code"] for r in reasons] == ["None", "ConditionalCheckFailed"]
    assert reasons[1]["Item"] == {"pk": {"S": "order#A-1"}, "held_by": {"S": "p-1"}}
    assert proposals.get("p-2") is None
    assert slots.get("order#A-1") == {"pk": {"S": "order#A-1"}, "held_by": {"S": "p-1"}}


def test_a_condition_check_action_guards_a_write_to_another_item(make_table: Callable[..., Table]) -> None:
    """AWS (TransactWriteItems, ConditionCheck): "Applies a condition to an item that is not being
    modified by the transaction"; when it fails, the transaction is cancelled."""
    table = make_table()
    table.db.put_item(TableName=table.name, Item={"pk": {"S": "breaker"}, "state": {"S": "open"}})
    check = {
        "ConditionCheck": {
            "TableName": table.name,
            "Key": {"pk": {"S": "breaker"}},
            "ConditionExpression": "#s = :closed",
            "ExpressionAttributeNames": {"#s": "state"},
            "ExpressionAttributeValues": {":closed": {"S": "closed"}},
        }
    }

    with pytest.raises(ClientError) as caught:
        table.db.transact_write_items(TransactItems=[check, put(table, "call-1")])

    assert [r["Code"] for r in caught.value.response["CancellationReasons"]] == [
        "ConditionalCheckFailed",
        "None",
    ]
    assert table.get("call-1") is None
    table.db.put_item(TableName=table.name, Item={"pk": {"S": "breaker"}, "state": {"S": "closed"}})
    table.db.transact_write_items(TransactItems=[check, put(table, "call-1")])
    assert table.get("call-1") == {"pk": {"S": "call-1"}}


def test_two_actions_on_one_item_are_refused_and_write_nothing(make_table: Callable[..., Table]) -> None:
    """AWS (TransactWriteItems): "You can't target the same item with multiple operations within
    the same transaction" (a ValidationException); nothing is written."""
    table = make_table()

    with pytest.raises(ClientError) as caught:
        table.db.transact_write_items(
            TransactItems=[put(table, "other"), put(table, "same", n="1"), put(table, "same", n="2")]
        )

    assert caught.value.response["Error"]["Code"] == "ValidationException"
    assert table.get("same") is None
    assert table.get("other") is None
