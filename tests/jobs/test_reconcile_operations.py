"""reconcile-operations on moto with the shop's real refund tool: settle from evidence, or ask a person."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from decimal import Decimal
from typing import Any

import pytest

from lockgate.actions.ledger import Ledger, Operation, OpState
from lockgate.actions.once import operation_key
from lockgate.actions.tools import OutcomeUnknown
from lockgate.agent.tasks import Task
from lockgate.approvals.decisions import Choice, DecisionRecord, DecisionStore
from lockgate.approvals.proposals import RESOLVE_TOOL, ProposalStore
from lockgate.clock import FixedClock
from lockgate.config import ApprovalsConfig, Reviewer
from lockgate.inbox.events import internal_event
from lockgate.inbox.store import InboxStore
from lockgate.jobs.builtin.reconcile_operations import OperationReconciler, escalation_id
from lockgate.telemetry import CountingMetrics
from lockgate_infra.local.spans import install
from shop.arguments import RefundOrderArgs
from shop.refunds import REFUND_ORDER
from shop.services import ShopServices
from tests.agent.toolkit import Effects, make_task
from tests.integration.test_shop_tools import clients, context, payment_rows, shop  # noqa: F401 - fixtures
from tests.jobs.conftest import context as job_context
from tests.support import Aws

CONFIG = ApprovalsConfig(reviewers=(Reviewer("alice", "Alice", ("payments",)),))
ARGS = RefundOrderArgs(order_id="A-1043", amount="80", reason="damaged")


class Rig:
    """The ledger, the approval tables, the shop task that offers refund_order, and the job."""

    def __init__(self, aws: Aws, services: ShopServices, clock: FixedClock) -> None:
        db = aws.client("dynamodb")
        self.aws, self.shop, self.clock = aws, services, clock
        self.ledger = Ledger(db, aws.state_table, clock)
        self.proposals = ProposalStore(db, aws.names["ApprovalsTable"])
        self.decisions = DecisionStore(db, aws.names["DecisionsTable"])
        self.task: Task = make_task(Effects(), tools=[REFUND_ORDER], services={"shop": services})
        self.op_key = operation_key("run-1", "refund_order", f"refund#A-1043#{ARGS.amount:.2f}", {})
        self.metrics = CountingMetrics()

    def refund_with_lost_answer(self, *, written: bool) -> None:
        """The ledger runs the refund; the answer is lost (written or not), so the entry is UNKNOWN."""

        def effect(key: str) -> Any:
            if written:
                REFUND_ORDER.run(ARGS, context(self.shop, key))
            raise OutcomeUnknown("timed out waiting for the payments table")

        assert self.execute(effect).state is OpState.UNKNOWN

    def execute(self, effect: Callable[[str], Any]) -> Operation:
        """The refund through the ledger, as the agent loop calls it."""
        return self.ledger.execute(
            op_key=self.op_key,
            fingerprint="fp",
            tool="refund_order",
            run_id="run-1",
            summary="refund $80.00 on order A-1043",
            effect=effect,
            is_failure=lambda exc: False,
            is_unknown=lambda exc: isinstance(exc, OutcomeUnknown),
        )

    def run(self, inbox: InboxStore | None = None) -> Any:
        job = OperationReconciler(
            ledger=self.ledger,
            proposals=self.proposals,
            decisions=self.decisions,
            config=CONFIG,
            tasks={self.task.name: self.task},
            inbox=inbox,
        )
        return job(job_context(self.clock, self.metrics))

    def state(self) -> OpState:
        op = self.ledger.get(self.op_key)
        assert op is not None
        return op.state

    def open_entries(self) -> list[str]:
        found = []
        for state in (OpState.IN_PROGRESS, OpState.UNKNOWN):
            found += [op.key for op in self.ledger.open_page(state)[0]]
        return found


@pytest.fixture
def rig(aws: Aws, shop: ShopServices, clock: FixedClock) -> Rig:  # noqa: F811 - the imported fixture
    return Rig(aws, shop, clock)


def test_an_unknown_refund_whose_payment_exists_succeeds_and_is_not_run_again(rig: Rig) -> None:
    # Given a refund that was written but whose answer was lost (UNKNOWN in the ledger)
    rig.refund_with_lost_answer(written=True)
    # When the job runs
    result = rig.run()
    # Then the entry is SUCCEEDED with the payment's own result, and left the open index
    op = rig.ledger.get(rig.op_key)
    assert op is not None and op.state is OpState.SUCCEEDED
    assert op.result["refund_id"] == op.idempotency_key and op.result["refunded"] == "80.00"
    assert op.error is None
    assert result.counts["succeeded"] == 1 and rig.open_entries() == []
    # And the refund happened once: one payment row, the order counts $80 once, no proposal
    assert len(payment_rows(rig.aws)) == 1
    order = rig.shop.orders.get("A-1043")
    assert order is not None and order.refunded == Decimal("80.00")
    assert rig.proposals.get(escalation_id(rig.op_key)) is None
    # And the agent retrying the same call now gets the recorded result, never a second refund
    again = rig.execute(lambda key: pytest.fail("executed again"))
    assert again.state is OpState.SUCCEEDED and len(payment_rows(rig.aws)) == 1


def test_an_unknown_refund_with_no_payment_is_escalated_and_a_persons_answer_settles_it(rig: Rig) -> None:
    # Given a refund whose call never reached the payments table (UNKNOWN in the ledger)
    rig.refund_with_lost_answer(written=False)
    # When the job runs, twice
    first, second = rig.run(), rig.run()
    # Then it stays UNKNOWN and one proposal asks a person, with a code-built summary
    assert (first.counts["escalated"], second.counts["escalated"], second.counts["waiting"]) == (1, 0, 1)
    assert rig.state() is OpState.UNKNOWN and payment_rows(rig.aws) == []
    proposal = rig.proposals.get(escalation_id(rig.op_key))
    assert proposal is not None and proposal.tool == RESOLVE_TOOL
    assert proposal.summary == "Did this happen? refund $80.00 on order A-1043"
    assert "no record of it found downstream" in proposal.why[0]
    # When the reviewer answers "it did not happen" (reject), and the job runs again
    rig.decisions.record(
        DecisionRecord(
            proposal.approval_id, "alice", Choice.REJECT, int(rig.clock.now()), proposal.fingerprint
        )
    )
    third = rig.run()
    # Then the entry is FAILED with who said so, nothing was refunded, and it left the open index
    op = rig.ledger.get(rig.op_key)
    assert op is not None and op.state is OpState.FAILED and "alice" in (op.error or "")
    assert third.counts["failed"] == 1 and rig.open_entries() == [] and payment_rows(rig.aws) == []


def test_a_stuck_in_progress_operation_becomes_unknown_but_a_live_one_is_left(rig: Rig) -> None:
    # Given an executor that started a refund and died (IN_PROGRESS, lease 120 s)
    now = int(rig.clock.now())
    summary = "refund $80.00 on order A-1043"
    rig.ledger._begin(rig.op_key, "fp", "refund_order", "run-1", summary, "dead", now)  # noqa: SLF001
    # And another that started later and is still running (its lease ends at now + 200 + 120)
    rig.ledger._begin("live-op", "fp", "refund_order", "run-2", "refund $5.00", "alive", now + 200)  # noqa: SLF001
    # When the job runs after the first lease expired but inside the second
    rig.clock.advance(150)
    result = rig.run()
    # Then the stuck one is UNKNOWN (and, with no payment found, asked about); the live one is untouched
    assert rig.state() is OpState.UNKNOWN and result.counts["now_unknown"] == 1
    live = rig.ledger.get("live-op")
    assert live is not None and (live.state, live.owner) == (OpState.IN_PROGRESS, "alive")
    assert rig.proposals.get(escalation_id(rig.op_key)) is not None
    assert sorted(rig.open_entries()) == sorted(["live-op", rig.op_key])


def test_a_tool_without_a_hook_is_asked_about_and_an_approval_means_it_happened(rig: Rig) -> None:
    # Given an UNKNOWN entry of a tool no task offers a reconcile hook for
    op = rig.ledger.execute(
        op_key="run-9#wire#abc",
        fingerprint="fp",
        tool="wire",
        run_id="run-9",
        summary="wire $500.00 to ACME",
        effect=lambda key: (_ for _ in ()).throw(OutcomeUnknown("bank timed out")),
        is_failure=lambda exc: False,
        is_unknown=lambda exc: True,
    )
    assert op.state is OpState.UNKNOWN
    # When the job runs, and the reviewer answers "it happened" (approve), and the job runs again
    assert rig.run().counts["escalated"] == 1
    proposal = rig.proposals.get(escalation_id(op.key))
    assert proposal is not None and "has no reconcile hook" in proposal.why[0]
    rig.decisions.record(
        DecisionRecord(
            proposal.approval_id, "alice", Choice.APPROVE, int(rig.clock.now()), proposal.fingerprint
        )
    )
    assert rig.run().counts["succeeded"] == 1
    # Then the entry is SUCCEEDED, recording who confirmed it
    settled = rig.ledger.get(op.key)
    assert settled is not None and settled.state is OpState.SUCCEEDED
    assert settled.result == {"confirmed_by": ["alice"]} and rig.open_entries() == []


def test_the_reconciliation_of_a_run_s_operation_joins_that_delivery_s_trace(rig: Rig) -> None:
    # Given the delivery the refund ran for, stored with its trace, and the refund left UNKNOWN
    spans = install()
    carried = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    inbox = InboxStore(rig.aws.client("dynamodb"), rig.aws.inbox_table)
    delivery = internal_event("helpdesk", "1", "email", b"{}", int(rig.clock.now()), trace=carried)
    assert inbox.put_new(replace(delivery, pk="run-1")).created
    rig.refund_with_lost_answer(written=True)
    # When the job settles it
    rig.run(inbox)
    # Then its span is in the delivery's trace, under the span that stored it, and says what it did
    (settled,) = [
        s for s in spans.spans() if s.name == "reconcile operation" and s.parent_id == "00f067aa0ba902b7"
    ]
    assert settled.trace_id == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert settled.attributes["lockgate.reconcile.outcome"] == "succeeded"
    assert settled.attributes["lockgate.ledger.state"] == "UNKNOWN"  # as the job found it
