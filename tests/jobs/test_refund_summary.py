"""The shop's scheduled refund summary: its read-only tool over real payment rows, and who it may email."""

from __future__ import annotations

import json
from datetime import date

import pytest

from lockgate.actions.facts import RunFacts
from lockgate.actions.tools import ToolContext, ToolError
from lockgate.clock import FixedClock
from lockgate.inbox.events import internal_event
from lockgate.inbox.routing import InboxEvent
from shop.arguments import SendEmailArgs
from shop.services import ShopServices, ShopSettings
from shop.summary import ListRefundsArgs, list_refunds, only_to_owner, start
from tests.support import Aws

JAN_5 = 1_767_571_200  # 2026-01-05T00:00:00Z


@pytest.fixture
def shop(aws: Aws) -> ShopServices:
    settings = ShopSettings(
        aws.names["ShopOrdersTable"], aws.names["ShopPaymentsTable"], aws.names["ShopMailTable"]
    )
    return ShopServices.build(settings, aws.client, FixedClock(JAN_5 + 6 * 3600))


def _refund(aws: Aws, key: str, amount: str, created_at: int) -> None:
    aws.client("dynamodb").put_item(
        TableName=aws.names["ShopPaymentsTable"],
        Item={
            "idempotency_key": {"S": key},
            "order_id": {"S": key.split("#")[1]},
            "customer_email": {"S": "ada@example.com"},
            "amount": {"N": amount},
            "currency": {"S": "USD"},
            "reason": {"S": "damaged"},
            "created_at": {"N": str(created_at)},
        },
    )


def test_given_refunds_on_several_days_when_listing_one_day_then_only_that_days_rows_and_their_total(
    aws: Aws, shop: ShopServices
) -> None:
    _refund(aws, "refund#A-1043#20.00", "20.00", JAN_5 - 3600)  # 4 January 23:00
    _refund(aws, "refund#A-2001#15.50", "15.50", JAN_5 - 86_400)  # 4 January 00:00
    _refund(aws, "refund#A-1042#5.00", "5.00", JAN_5)  # 5 January: not the 4th
    context = ToolContext("run", RunFacts(), None, {"shop": shop})
    result = list_refunds(ListRefundsArgs(day=date(2026, 1, 4)), context)
    assert result["count"] == 2 and result["total"] == "35.50"
    assert [r["order_id"] for r in result["refunds"]] == ["A-2001", "A-1043"]
    with pytest.raises(ToolError, match="last 31 days"):
        list_refunds(ListRefundsArgs(day=date(2025, 10, 1)), context)


@pytest.mark.parametrize(
    ("to", "allowed"),
    [("owner@shop.example.com", True), ("OWNER@shop.example.com ", True), ("ada@example.com", False)],
)
def test_the_summary_may_only_be_emailed_to_the_owner(to: str, allowed: bool) -> None:
    args = SendEmailArgs(to=to.strip(), subject="Refunds on 2026-01-04", body="none")
    assert only_to_owner(args, RunFacts(values={"owner_email": "owner@shop.example.com"})).allowed is allowed


def test_given_a_schedule_event_when_the_run_starts_then_it_summarises_the_day_before(
    shop: ShopServices,
) -> None:
    body = json.dumps({"schedule": "refund-summary", "scheduled_time": "2026-01-05T06:17:00Z"}).encode()
    delivery = internal_event(
        "schedule", "refund-summary#2026-01-05T06:17:00Z", "refund-summary", body, JAN_5
    )
    begun = start(InboxEvent(delivery, body), {"shop": shop})
    assert "refunds of 2026-01-04 (UTC)" in begun.prompt and "owner@shop.example.com" in begun.prompt
    assert begun.facts.get("owner_email") == "owner@shop.example.com"
