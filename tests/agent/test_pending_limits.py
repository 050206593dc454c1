"""Pending limits: one proposal per (task, tool, target), caps per task and per sender, all held by
the transaction that writes the proposal, and given back once it is settled."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from lockgate.approvals.limits import LimitReached, PendingLimits, holds, slot_key
from lockgate.approvals.proposals import HOUR, Proposal, ProposalStore
from lockgate.config import ApprovalsConfig
from tests.support import Aws, state_row

NOW = 1_800_000_000
CONFIG = ApprovalsConfig(max_pending_per_task=4, max_pending_per_sender=2)


def proposal(
    n: int, *, order: str | None = "A-1042", sender: str | None = "grace@example.com", at: int = NOW
) -> Proposal:
    """Proposal ``n`` of the support-inbox task, a refund on ``order`` asked by ``sender`` at ``at``."""
    return Proposal(
        approval_id=f"ap_{n:024d}",
        task="support-inbox",
        run_id=f"helpdesk#m-{n}",
        tool="refund_order",
        args={"order_id": order or "-", "amount": f"{10 + n}.00", "reason": "broken"},
        fingerprint="f" * 64,
        summary=f"refund ${10 + n}.00 on order {order}",
        unverified_reason="",
        why=("this run read an email",),
        created_at=at,
        expires_at=at + 24 * HOUR,
        run_within_seconds=HOUR,
        extra={"holds": holds("support-inbox", "refund_order", order, sender)},
    )


@pytest.fixture
def limits(aws: Aws) -> PendingLimits:
    return PendingLimits(aws.client("dynamodb"), aws.names["ApprovalsTable"], aws.state_table, CONFIG)


def approvals(aws: Aws) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = aws.client("dynamodb").scan(TableName=aws.names["ApprovalsTable"])["Items"]
    return items


def holders(aws: Aws, pk: str) -> tuple[int, set[str]]:
    row = state_row(aws, pk, "holders") or {}
    return int(row.get("n", {}).get("N", "0")), {k for k in row if k.startswith("h_")}


def test_a_second_refund_on_the_same_order_is_refused_and_nothing_of_it_is_stored(
    aws: Aws, limits: PendingLimits
) -> None:
    # Given a refund on A-1042 waiting for a person
    first = proposal(1)
    assert limits.propose(first, NOW) == (first, True)
    # When another refund on the same order is proposed
    with pytest.raises(LimitReached) as refused:
        limits.propose(proposal(2), NOW + 5)
    # Then it is refused naming the waiting one, and only the first proposal and its places exist
    assert refused.value.limit == "target"
    assert "refund $11.00 on order A-1042" in refused.value.reason
    assert [i["approval_id"]["S"] for i in approvals(aws)] == [first.approval_id]
    slot = state_row(aws, slot_key("support-inbox", "refund_order", "A-1042"), "slot")
    assert slot is not None and slot["holder"]["S"] == first.approval_id
    assert holders(aws, "pending#support-inbox") == (1, {f"h_{first.approval_id}"})
    # And a refund on another order is still taken
    assert limits.propose(proposal(3, order="A-1043"), NOW + 6)[1] is True


def test_a_replayed_proposal_returns_the_stored_one_and_takes_nothing_twice(
    aws: Aws, limits: PendingLimits
) -> None:
    first = proposal(1)
    limits.propose(first, NOW)
    # When the same proposal is written again (a replayed step)
    stored, created = limits.propose(replace(first, summary="changed"), NOW + 1)
    # Then the first one stands and the counters count it once
    assert (stored.summary, created) == (first.summary, False)
    assert holders(aws, "pending#support-inbox")[0] == 1


def test_a_released_proposal_frees_its_order_and_its_places_once(aws: Aws, limits: PendingLimits) -> None:
    first = proposal(1)
    limits.propose(first, NOW)
    # When it is settled (decided, run or expired) and released twice
    limits.release(first)
    limits.release(first)
    # Then its slot and holders are gone, counted out exactly once, and the order takes a new one
    assert state_row(aws, slot_key("support-inbox", "refund_order", "A-1042"), "slot") is None
    assert holders(aws, "pending#support-inbox") == (0, set())
    sender_pk = first.extra["holds"]["sender"]
    assert holders(aws, sender_pk) == (0, set())
    assert limits.propose(proposal(2), NOW + 10)[1] is True


def test_a_slot_whose_proposal_can_no_longer_run_is_taken_over(aws: Aws, limits: PendingLimits) -> None:
    # Given a proposal whose release was lost
    first = proposal(1)
    limits.propose(first, NOW)
    # When its decide and run windows have both passed, a new refund on the order is proposed
    later = NOW + 25 * HOUR + 1
    assert limits.waiting("support-inbox", "refund_order", "A-1042", later) is None
    assert limits.propose(proposal(2, at=later), later)[1] is True
    # Then the new one holds the slot, and policies see it as the refund waiting on the order
    slot = state_row(aws, slot_key("support-inbox", "refund_order", "A-1042"), "slot")
    assert slot is not None and slot["holder"]["S"] == proposal(2).approval_id
    assert limits.waiting("support-inbox", "refund_order", "A-1042", later) == proposal(2).args
    assert limits.waiting("support-inbox", "refund_order", "A-1042", later + 25 * HOUR + 1) is None


def test_one_sender_holds_at_most_its_cap_and_others_still_get_theirs(
    aws: Aws, limits: PendingLimits
) -> None:
    # Given a sender with two proposals waiting (the cap is 2)
    for n in (1, 2):
        limits.propose(proposal(n, order=f"A-10{n:02d}"), NOW)
    # When the same sender (any case) asks for a third
    with pytest.raises(LimitReached) as refused:
        limits.propose(proposal(3, order="A-1003", sender="Grace@Example.com"), NOW)
    assert refused.value.limit == "sender"
    assert "this sender" in refused.value.reason
    # Then another customer's proposal is still accepted, up to the task's cap of 4
    limits.propose(proposal(4, order="A-2001", sender="ada@example.com"), NOW)
    limits.propose(proposal(5, order="A-2002", sender="ada@example.com"), NOW)
    with pytest.raises(LimitReached) as full:
        limits.propose(proposal(6, order="A-3001", sender="alan@example.com"), NOW)
    assert full.value.limit == "task"
    assert len(approvals(aws)) == 4
    assert holders(aws, "pending#support-inbox")[0] == 4


def test_a_full_cap_of_proposals_that_can_no_longer_run_is_pruned_and_taken(
    aws: Aws, limits: PendingLimits
) -> None:
    # Given a sender's cap filled by proposals whose releases were lost
    for n in (1, 2):
        limits.propose(proposal(n, order=f"A-10{n:02d}"), NOW)
    # When the same sender asks again after their windows passed
    later = NOW + 25 * HOUR + 1
    assert limits.propose(proposal(3, order="A-1003", at=later), later)[1] is True
    # Then the stale holders were counted out and the new one counted in
    sender_pk = proposal(3).extra["holds"]["sender"]
    assert holders(aws, sender_pk) == (1, {f"h_{proposal(3).approval_id}"})


def test_a_proposal_without_a_target_or_sender_is_capped_per_task_only(
    aws: Aws, limits: PendingLimits
) -> None:
    first = proposal(1, order=None, sender=None)
    assert set(first.extra["holds"]) == {"task"}
    assert limits.propose(first, NOW)[1] is True
    assert ProposalStore(aws.client("dynamodb"), aws.names["ApprovalsTable"]).get(first.approval_id) == first


def test_a_transaction_that_meets_another_on_a_counter_is_tried_once_more(aws: Aws) -> None:
    # Given a store whose first transaction is cancelled by a concurrent one on the task's counter
    from botocore.exceptions import ClientError

    db = aws.client("dynamodb")
    real, calls = db.transact_write_items, []

    def conflicting(**request: Any) -> Any:
        calls.append(request)
        if len(calls) == 1:
            reasons = [{"Code": "None"}, {"Code": "TransactionConflict"}, {"Code": "None"}, {"Code": "None"}]
            error = {"Error": {"Code": "TransactionCanceledException"}, "CancellationReasons": reasons}
            raise ClientError(error, "TransactWriteItems")  # type: ignore[arg-type]
        return real(**request)

    db.transact_write_items = conflicting
    limits = PendingLimits(db, aws.names["ApprovalsTable"], aws.state_table, CONFIG)
    # When a proposal is written
    first = proposal(1)
    # Then the second try writes it and takes its places, once
    assert limits.propose(first, NOW) == (first, True)
    assert len(calls) == 2
    assert holders(aws, "pending#support-inbox") == (1, {f"h_{first.approval_id}"})
