"""A tool that calls an outside API with side effects (docs/examples/payments.py) against its stand-in.

The tool runs through the operation ledger as the agent loop runs it (``run_once``); the stand-in,
``RecordingApi``, records each call by the ``Idempotency-Key`` the adapter sent. A lost answer
leaves the ledger UNKNOWN, and the reconcile-operations job settles it from the stand-in's record
through the tool's reconcile hook, without a second refund.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from docs.examples.payments import REFUND_CHARGE, PaymentsApi, RefundArgs, payments_stand_in
from lockgate import RunFacts
from lockgate.actions.ledger import Ledger, Operation, OpState
from lockgate.actions.once import run_once
from lockgate.approvals.decisions import DecisionStore
from lockgate.approvals.proposals import ProposalStore
from lockgate.clock import FixedClock
from lockgate.config import ApprovalsConfig, Reviewer
from lockgate.jobs.builtin.reconcile_operations import OperationReconciler
from lockgate.telemetry import CountingMetrics
from lockgate_infra.testing import RecordingApi
from tests.agent.toolkit import Effects, make_task
from tests.jobs.conftest import context as job_context
from tests.support import Aws

ARGS = RefundArgs(charge="ch_3MmlLrLkdIwHu7ix0snN0B15", amount=2500)


@pytest.fixture
def payments() -> Iterator[RecordingApi]:
    with payments_stand_in() as api:
        yield api


def refund(ledger: Ledger, api: RecordingApi, run_id: str = "run#stripe#evt_1") -> Operation:
    """refund_charge through the ledger, as the agent loop runs a call a person approved."""
    return run_once(
        ledger,
        REFUND_CHARGE,
        ARGS,
        canonical=ARGS.model_dump(mode="json"),
        run_id=run_id,
        facts=RunFacts(),
        services={"payments": PaymentsApi(api.url, timeout=2.0)},
        summary=REFUND_CHARGE.summary(ARGS),
    )


def test_given_a_refund_then_the_api_gets_the_ledgers_key_and_a_retry_refunds_nothing_more(
    aws: Aws, clock: FixedClock, payments: RecordingApi
) -> None:
    ledger = Ledger(aws.client("dynamodb"), aws.state_table, clock)
    # When the tool runs, then again in another run (its identity is the charge and amount)
    first, second = refund(ledger, payments), refund(ledger, payments, run_id="run#stripe#evt_2")
    # Then the ledger holds one SUCCEEDED entry whose result is the provider's refund
    assert first.state is OpState.SUCCEEDED and second.key == first.key
    assert first.result["object"] == "refund" and first.result["amount"] == 2500
    # And the provider saw one refund, under the ledger's idempotency key
    (call,) = payments.calls("/v1/refunds")
    assert call.key == first.idempotency_key and call.fields["charge"] == ARGS.charge
    assert call.repeats == 0


def test_given_a_lost_answer_then_the_entry_is_unknown_and_reconcile_settles_it_from_the_provider(
    aws: Aws, clock: FixedClock, payments: RecordingApi
) -> None:
    ledger = Ledger(aws.client("dynamodb"), aws.state_table, clock)
    # Given a refund that took effect at the provider, whose answer never came back
    payments.lose_answer()
    lost = refund(ledger, payments)
    assert lost.state is OpState.UNKNOWN and len(payments.calls()) == 1
    # When the reconcile-operations job asks the tool's hook
    task = make_task(Effects(), tools=[REFUND_CHARGE], services={"payments": PaymentsApi(payments.url)})
    db = aws.client("dynamodb")
    job = OperationReconciler(
        ledger=ledger,
        proposals=ProposalStore(db, aws.names["ApprovalsTable"]),
        decisions=DecisionStore(db, aws.names["DecisionsTable"]),
        config=ApprovalsConfig(reviewers=(Reviewer("alice", "Alice", ("payments",)),)),
        tasks={task.name: task},
    )
    result = job(job_context(clock, CountingMetrics()))
    # Then the entry is SUCCEEDED with the refund the provider holds under its key
    settled = ledger.get(lost.key)
    assert result.counts["succeeded"] == 1
    assert settled is not None and settled.state is OpState.SUCCEEDED
    assert settled.result == payments.calls()[0].answer
    # And the agent asking again gets that result: still one refund at the provider
    assert refund(ledger, payments).state is OpState.SUCCEEDED and len(payments.calls()) == 1


def test_given_the_stand_in_then_it_refuses_a_change_without_a_key_and_a_key_reused_for_another(
    payments: RecordingApi,
) -> None:
    def post(body: bytes, key: str | None) -> tuple[int, dict[str, object], str | None]:
        headers = {"Idempotency-Key": key} if key else {}
        request = urllib.request.Request(f"{payments.url}/v1/refunds", body, headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=5) as answer:
                return answer.status, json.load(answer), answer.headers.get("Idempotent-Replayed")
        except urllib.error.HTTPError as exc:
            return exc.code, json.load(exc), None

    form = b"charge=ch_1&amount=100&metadata[lockgate_key]=k-1"
    assert post(form, None)[:2] == (400, {"error": "a POST must carry an Idempotency-Key header"})
    created, again = post(form, "k-1"), post(form, "k-1")
    assert created[0] == again[0] == 200 and created[1] == again[1] and again[2] == "true"
    assert post(b"charge=ch_1&amount=999", "k-1")[:2] == (
        409,
        {"error": "Idempotency-Key k-1 was first used with another request"},
    )
    (only,) = payments.calls()
    assert (only.key, only.repeats, only.fields["amount"]) == ("k-1", 1, "100")
