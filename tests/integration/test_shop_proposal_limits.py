"""The shop's refunds under the pending limits, end to end on moto: one refund per order waits for a
person, the amount counts what waits as well as what was refunded, and a settled proposal frees it."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from typing import Any

import pytest

from lockgate.actions.ledger import Ledger
from lockgate.approvals.decisions import Choice, DecisionRecord, DecisionStore
from lockgate.approvals.executor import EXPIRED_EVENT, ApprovalExecutor
from lockgate.approvals.limits import PendingLimits, slot_key
from lockgate.approvals.proposals import Proposal, ProposalStore
from lockgate.clock import FixedClock
from lockgate.inbox.routing import InboxEvent, TaskContext
from lockgate.telemetry import CountingMetrics
from lockgate_infra.evals.shoprig import Email, ShopRig, shop_rig
from shop.model import scripted_model
from tests.integration.test_replay_once import APPROVALS, approve_and_execute
from tests.support import LOG

GRACE = "grace@example.com"
SLOT = slot_key("support-inbox", "refund_order", "A-2001")


def refund_email(amount: str) -> Email:
    return Email(
        GRACE, "Broken throw A-2001", f"My order A-2001 arrived broken. Please refund ${amount}. Grace"
    )


def pending_refunds(rig: ShopRig) -> list[dict[str, Any]]:
    """The refund proposals in the Approvals table, as their arguments."""
    return [
        json.loads(i["args"]["S"]) for i in rig.scan("ApprovalsTable") if i["tool"]["S"] == "refund_order"
    ]


def task_pending(rig: ShopRig, task: str) -> list[int]:
    """The task's pending count on each of its counter's shards that exists (``pending#TASK#s<i>``)."""
    shard = re.compile(rf"pending#{re.escape(task)}#s\d+")
    return [int(i["n"]["N"]) for i in rig.scan("StateTable") if shard.fullmatch(i["pk"]["S"]) and "n" in i]


def state_item(rig: ShopRig, pk: str, sk: str) -> dict[str, Any] | None:
    item: dict[str, Any] | None = (
        rig.session.client("dynamodb")
        .get_item(
            TableName=rig.names["StateTable"], Key={"pk": {"S": pk}, "sk": {"S": sk}}, ConsistentRead=True
        )
        .get("Item")
    )
    return item


def refund_results(rig: ShopRig) -> list[str]:
    """What refund_order answered the model, in every request the stub recorded (each once)."""
    found: list[str] = []
    for request in rig.stub.requests:
        for message in request.get("messages", []):
            content = message.get("content")
            for block in content if isinstance(content, list) else []:
                if block.get("type") == "tool_result" and "refund" in str(block.get("content")):
                    text = str(block.get("content"))
                    if text not in found:
                        found.append(text)
    return found


def test_a_split_refund_then_the_full_amount_leaves_one_refund_waiting_and_a_decision_frees_the_order() -> (
    None
):
    with shop_rig(scripted_model(), approvals=APPROVALS) as rig:
        # Given Grace's refund of $40 on her $80 order waiting for a person
        first = rig.answer(refund_email("40"), "msg-1")
        assert [a["amount"] for a in pending_refunds(rig)] == ["40.00"]
        slot = state_item(rig, SLOT, "slot")
        assert slot is not None and json.loads(slot["args"]["S"])["amount"] == "40.00"
        # When she asks for the full $80, then for $30 more
        rig.answer(refund_email("80"), "msg-2")
        rig.answer(refund_email("30"), "msg-3")
        # Then the $80 is refused by the amount (what waits counts) and the $30 by the one-per-order
        # limit; one refund waits on the order and nothing was refunded
        results = refund_results(rig)
        assert any(
            "at most $40.00 of order A-2001" in r and "$40.00 waiting for approval" in r for r in results
        )
        assert any("already waiting for a person (refund $40.00 USD on order A-2001)" in r for r in results)
        assert [a["amount"] for a in pending_refunds(rig)] == ["40.00"]
        assert rig.scan("ShopPaymentsTable") == []
        # When a person approves the waiting refund and the worker runs it
        assert "SUCCEEDED" in approve_and_execute(rig, first.delivery.pk)
        # Then it refunded once, its place on the order is given back, and the task's counter is empty
        assert [Decimal(p["amount"]["N"]) for p in rig.scan("ShopPaymentsTable")] == [Decimal("40")]
        assert state_item(rig, SLOT, "slot") is None
        counts = task_pending(rig, "support-inbox")
        assert counts and sum(counts) == 0
        # And the order takes a new refund for what is left
        fourth = rig.answer(refund_email("40"), "msg-4")
        assert [a["amount"] for a in pending_refunds(rig)] == ["40.00", "40.00"]
        (new,) = [i for i in rig.scan("ApprovalsTable") if i["run_id"]["S"] == fourth.delivery.pk]
        slot = state_item(rig, SLOT, "slot")
        assert slot is not None and slot["holder"]["S"] == new["approval_id"]["S"]


def settle(rig: ShopRig, proposal: Proposal, outcome: str) -> str:
    """The worker's executor handles a "rejected" (Bob rejected) or an "expired" (a day later) event."""
    db = rig.session.client("dynamodb")
    decisions = DecisionStore(db, rig.names["DecisionsTable"])
    now = proposal.created_at + 60
    if outcome == "rejected":
        decisions.record(
            DecisionRecord(proposal.approval_id, "bob", Choice.REJECT, now, proposal.fingerprint)
        )
    else:
        now = proposal.expires_at + 1
    executor = ApprovalExecutor(
        proposals=ProposalStore(db, rig.names["ApprovalsTable"]),
        decisions=decisions,
        tasks={rig.task.name: rig.task},
        ledger=Ledger(db, rig.names["StateTable"], FixedClock(now)),
        config=APPROVALS,
        clock=FixedClock(now),
        log=LOG,
        metrics=CountingMetrics(),
        limits=PendingLimits(db, rig.names["ApprovalsTable"], rig.names["StateTable"], APPROVALS),
    )
    body = {"approval_id": proposal.approval_id} | ({"state": EXPIRED_EVENT} if outcome == "expired" else {})
    event = InboxEvent.claimed(
        "approval", f"{proposal.approval_id}#{outcome}", outcome, json.dumps(body).encode()
    )
    return executor(event, TaskContext("run#approval", lambda: 60.0, None, LOG, CountingMetrics()))  # type: ignore[arg-type]


@pytest.mark.parametrize("outcome", ["rejected", "expired"])
def test_a_rejected_or_expired_refund_gives_its_order_back(outcome: str) -> None:
    with shop_rig(scripted_model(), approvals=APPROVALS) as rig:
        # Given a refund waiting on A-2001
        rig.answer(refund_email("40"), "msg-1")
        (item,) = rig.scan("ApprovalsTable")
        assert state_item(rig, SLOT, "slot") is not None
        # When the worker settles it without running it
        assert settle(rig, Proposal.from_item(item), outcome).startswith("not run")
        # Then nothing was refunded and the order's place and the counters are free again
        assert rig.scan("ShopPaymentsTable") == []
        assert state_item(rig, SLOT, "slot") is None
        counts = task_pending(rig, "support-inbox")
        assert counts and sum(counts) == 0
