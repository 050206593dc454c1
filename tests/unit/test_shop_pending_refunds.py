"""The refundable amount counts the refund already waiting for a person as well as what was refunded."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from lockgate.actions.facts import RunFacts
from lockgate.errors import StoreUnavailable
from shop.policies import refund_within_refundable
from tests.unit.test_shop_policies import facts, refund, with_refunded


def pending_on(order: str, amount: str, reason: str = "broken") -> Any:
    """A pending reader with one refund of ``amount`` waiting on ``order``; it records what it was asked."""
    asked: list[tuple[str, str]] = []

    def read(tool: str, target: str) -> dict[str, Any] | None:
        asked.append((tool, target))
        return {"order_id": order, "amount": amount, "reason": reason} if target == order else None

    read.asked = asked  # type: ignore[attr-defined]
    return read


def with_pending(run_facts: RunFacts, reader: Any) -> RunFacts:
    return replace(run_facts, pending=reader)


@pytest.mark.parametrize(
    ("refunded", "waiting", "amount", "allowed"),
    [
        # A-1043: total $120.00
        ("0.00", "40.00", "80.00", True),  # waiting + asked = total
        ("0.00", "40.00", "80.01", False),
        ("0.00", "40.00", "120.00", False),  # a split under the threshold, then the full amount
        ("40.00", "40.00", "40.00", True),  # refunded + waiting + asked = total
        ("40.00", "40.00", "40.01", False),
        ("100.00", "20.00", "0.01", False),  # nothing left once the waiting one runs
    ],
)
def test_given_a_refund_waiting_when_refunding_the_same_order_then_it_counts(
    refunded, waiting, amount, allowed
):
    reader = pending_on("A-1043", waiting)
    verdict = refund_within_refundable(
        refund("A-1043", amount), with_pending(facts(lookup=with_refunded("A-1043", refunded)), reader)
    )
    assert verdict.allowed is allowed, verdict.reason
    assert reader.asked == [("refund_order", "A-1043")]
    if not allowed:
        assert f"${waiting} waiting for approval" in verdict.reason


def test_given_the_waiting_refund_is_this_very_call_then_it_is_not_counted_twice() -> None:
    # A replayed step asks again with the same arguments as the proposal it made.
    reader = pending_on("A-1043", "80.00", reason="arrived damaged")
    verdict = refund_within_refundable(refund("A-1043", "80.00"), with_pending(facts(), reader))
    assert verdict.allowed, verdict.reason


def test_given_a_refund_waiting_on_another_order_then_this_one_is_not_limited_by_it() -> None:
    verdict = refund_within_refundable(
        refund("A-1042", "49.00"), with_pending(facts(), pending_on("A-1043", "99"))
    )
    assert verdict.allowed, verdict.reason


def test_given_the_pending_refunds_cannot_be_read_then_the_refund_is_refused() -> None:
    def unavailable(tool: str, target: str) -> None:
        raise StoreUnavailable("ProvisionedThroughputExceededException")

    verdict = refund_within_refundable(refund("A-1043", "10.00"), with_pending(facts(), unavailable))
    assert not verdict.allowed
    assert "cannot be checked right now" in verdict.reason
