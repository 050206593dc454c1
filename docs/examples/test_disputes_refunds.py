"""The disputes workflow's refunds: run once at the payments API when approved, held to the dispute."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from disputes.model import scripted_model
from disputes.payments import RefundArgs, payments_stand_in
from disputes.refunds import only_the_disputed_charge

from lockgate import RunFacts
from lockgate_infra.testing import RecordingApi, ScriptedModel, TestStack

EVENTS = Path(__file__).resolve().parents[2] / "workflows" / "disputes" / "events"


@pytest.fixture
def lockgate_model() -> ScriptedModel:
    return scripted_model()


@pytest.fixture
def payments() -> Iterator[RecordingApi]:
    with payments_stand_in() as api:
        yield api


@pytest.fixture
def lockgate_environment(payments: RecordingApi) -> dict[str, str]:
    return {"PAYMENTS_API_URL": payments.url}


def sample(name: str) -> Any:
    return json.loads((EVENTS / f"{name}.json").read_text(encoding="utf-8"))


def test_a_duplicate_charge_is_refunded_once_a_person_approves(
    lockgate_stack: TestStack, payments: RecordingApi
) -> None:
    lockgate_stack.send("stripe", sample("close"), event="charge.dispute.created")
    (refund,) = [p for p in lockgate_stack.proposals() if p.tool == "refund_charge"]
    assert refund.summary == "refund 10.00 of charge ch_1AZtxr2eZvKYlo2C"
    assert payments.calls() == []

    lockgate_stack.approve(refund, as_="alice")

    (made,) = payments.calls("/v1/refunds")
    (entry,) = lockgate_stack.ledger.operations("refund_charge")
    assert (made.key, made.fields["amount"]) == (entry.idempotency_key, "1000")
    assert entry.result["object"] == "refund"


@pytest.mark.parametrize(
    ("charge", "amount", "allowed"),
    [("ch_1AZtxr2eZvKYlo2C", 1000, True), ("ch_1AZtxr2eZvKYlo2C", 1001, False), ("ch_other", 10, False)],
)
def test_a_refund_is_held_to_the_disputed_charge_and_amount(charge: str, amount: int, allowed: bool) -> None:
    facts = RunFacts(values={"charge": "ch_1AZtxr2eZvKYlo2C", "amount": 1000})

    assert only_the_disputed_charge(RefundArgs(charge=charge, amount=amount), facts).allowed is allowed
