"""The shop hears a person's decision in the run that proposed the refund (Task.respond), end to end
on the embedded stack: the worker function routes the decision's inbox event to the run, the model
reads the reviewer's words and the customer gets one email saying what the team decided.

The decision's event is enqueued here as the approvals side sends it
(``DecisionResponse(...).to_event(now)``), so these tests are about the run's side only.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

from lockgate.actions.responses import DecisionResponse
from lockgate.agent.runs import Run
from lockgate.approvals.proposals import Proposal
from lockgate.inbox.events import enqueue
from lockgate.inbox.models import Delivery
from lockgate.inbox.queue import InboxQueue
from lockgate.inbox.store import InboxStore
from lockgate_infra.cli.transcript import render
from lockgate_infra.testing import TestStack

GRACE = "grace@example.com"
REFUND = {
    "message_id": "msg-respond-1",
    "from": GRACE,
    "subject": "Broken teapot, order A-2001",
    "text": "My order A-2001 arrived broken. Please refund it. Grace",
}
LOG = logging.getLogger("lockgate.tests")


def refund_waiting(stack: TestStack) -> tuple[Run, Proposal]:
    """Grace asks for her $80 refund: over $50, so it waits for a person; she is told so."""
    sent = stack.send("helpdesk", REFUND)
    (proposal,) = stack.proposals()
    assert proposal.summary == "refund $80.00 USD on order A-2001"
    run = stack.run(sent)
    assert run.status == "completed" and len(stack.emails()) == 1
    return run, proposal


def send_decision(stack: TestStack, proposal: Proposal, **decided: Any) -> Delivery:
    """The approvals side's event for the decision, into the inbox and onto the queue; then drain."""
    response = DecisionResponse(
        run_id=proposal.run_id,
        approval_id=proposal.approval_id,
        task=proposal.task,
        call_id=proposal.call_id,
        tool=proposal.tool,
        proposed=proposal.args,
        **{"outcome": "rejected", "by": ("bob",), **decided},
    )
    delivery = response.to_event(int(time.time()))
    inbox = InboxStore(stack.client("dynamodb"), stack.table("InboxTable"))
    assert enqueue(inbox, InboxQueue(stack.client("sqs"), stack.table("InboxQueue")), delivery, LOG)
    stack.drain()
    return inbox.get(delivery.pk)


def deliver_again(stack: TestStack, delivery: Delivery) -> Delivery:
    """The worker that handled it died before recording it done: its lease expires, it is handled again."""
    stack.client("dynamodb").update_item(
        TableName=stack.table("InboxTable"),
        Key={"pk": {"S": delivery.pk}},
        UpdateExpression="SET #s = :processing, lease_owner = :dead, lease_expires_at = :past",
        ExpressionAttributeNames={"#s": "status"},
        ExpressionAttributeValues={
            ":processing": {"S": "processing"},
            ":dead": {"S": "w-1"},
            ":past": {"N": "0"},
        },
    )
    InboxQueue(stack.client("sqs"), stack.table("InboxQueue")).send(delivery.pk)
    stack.drain()
    return InboxStore(stack.client("dynamodb"), stack.table("InboxTable")).get(delivery.pk)


def decision_told(run: Run) -> dict[str, Any]:
    """What the run's decision step gave the model as decision_on_proposal's result."""
    (step,) = [s for s in run.steps if s.kind == "decision"]
    assert step.data["use"]["name"] == "decision_on_proposal"
    told: dict[str, Any] = json.loads(step.data["result"]["content"])
    return told


def test_a_rejected_refund_with_a_reason_is_told_to_the_customer_once_and_nothing_is_refunded(
    lockgate_stack: TestStack,
) -> None:
    # Given Grace's $80 refund waiting for a person, and the reply telling her so
    run, proposal = refund_waiting(lockgate_stack)
    # When Bob rejects it saying "item was used", and the decision comes back to the run
    delivery = send_decision(lockgate_stack, proposal, reason="item was used")
    # Then the run took it up: the reviewer's words reached the model as the result of its call,
    # and the model answered it with an email to the customer
    resumed = lockgate_stack.run(run.run_id)
    assert decision_told(resumed) == {
        "approval_id": proposal.approval_id,
        "tool": "refund_order",
        "proposed": proposal.args,
        "decision": "rejected",
        "by": ["bob"],
        "reviewer_said": "item was used",
    }
    after = [s for s in resumed.steps if s.n > next(d.n for d in resumed.steps if d.kind == "decision")]
    assert [s.kind for s in after] == ["model", "tools", "model"]
    assert (resumed.status, resumed.resumed_by) == ("completed", f"{proposal.approval_id}#rejected")
    assert delivery.outcome == f"support-inbox: completed: {resumed.outcome}"
    # (and `lockgate runs show` says so)
    shown = render(resumed)
    assert f"a person's decision on {proposal.approval_id} (refund_order): rejected" in shown
    assert '"reviewer_said": "item was used"' in shown
    # And Grace got exactly one email telling her the decision, with Bob's reason
    emails = lockgate_stack.emails()
    (told,) = [e for e in emails if "could not approve" in e["body"]]
    assert told["to"] == [GRACE] and told["subject"] == "Re: Broken teapot, order A-2001"
    assert "The reviewer's note: item was used" in told["body"] and len(emails) == 2
    # And nothing was refunded
    assert not lockgate_stack.ledger.ran("refund_order")
    assert (
        lockgate_stack.client("dynamodb").scan(TableName=lockgate_stack.table("ShopPaymentsTable"))["Items"]
        == []
    )


def test_a_decision_delivered_again_asks_no_model_and_sends_no_second_email(
    lockgate_stack: TestStack,
) -> None:
    # Given a rejection the run heard and told Grace about
    run, proposal = refund_waiting(lockgate_stack)
    delivery = send_decision(lockgate_stack, proposal, reason="item was used")
    steps = len(lockgate_stack.run(run.run_id).steps)
    # When the same event is handled again (its worker died before recording it done)
    again = deliver_again(lockgate_stack, delivery)
    # Then the run had heard it: no model step and no email more
    assert again.outcome is not None and again.outcome.startswith("support-inbox: already heard")
    assert len(lockgate_stack.run(run.run_id).steps) == steps and len(lockgate_stack.emails()) == 2


def test_an_edited_refund_is_told_as_what_was_refunded(lockgate_stack: TestStack) -> None:
    # Given the refund waiting; When the decision says a reviewer changed it to $40 and it ran
    run, proposal = refund_waiting(lockgate_stack)
    ran = {**proposal.args, "amount": "40.00"}
    send_decision(
        lockgate_stack, proposal, outcome="edited", by=("alice",), ran=ran, result={"refunded": "40.00"}
    )
    # Then the model is told what ran and what the reviewer changed, and tells Grace what she got
    assert decision_told(lockgate_stack.run(run.run_id))["changed_by_reviewer"] == {"amount": "40.00"}
    (told,) = [e for e in lockgate_stack.emails() if "with a change" in e["body"]]
    assert "we refunded $40.00 on order A-2001" in told["body"]
    assert "your refund request of $80.00 for order A-2001" in told["body"]


def test_bob_rejects_on_his_page_with_a_reason_and_the_run_tells_grace_once(
    lockgate_stack: TestStack,
) -> None:
    # Given Grace's $80 refund waiting for a person
    run, proposal = refund_waiting(lockgate_stack)
    # When Bob rejects it through his own link, typing why
    lockgate_stack.reject(proposal, as_="bob", reason="item was used")
    # Then the worker's executor sent the decision back to the run, which heard Bob's words
    resumed = lockgate_stack.run(run.run_id)
    told = decision_told(resumed)
    assert (told["decision"], told["by"]) == ("rejected", ["bob"]) and "item was used" in told[
        "reviewer_said"
    ]
    assert resumed.status == "completed"
    # And Grace got exactly one email more, from the run, with the reason (and not the reviewer's name),
    # none from the decision hook; and nothing was refunded
    emails = lockgate_stack.emails()
    assert len(emails) == 2
    assert (
        "could not approve" in emails[1]["body"] and "The reviewer's note: item was used" in emails[1]["body"]
    )
    assert not lockgate_stack.ledger.ran("refund_order")


def test_alice_approves_a_smaller_refund_and_the_run_tells_grace_what_was_refunded(
    lockgate_stack: TestStack,
) -> None:
    # Given Grace's $80 refund waiting for a person
    run, proposal = refund_waiting(lockgate_stack)
    # When Alice approves it changed to $40 on her page
    lockgate_stack.edit(proposal, as_="alice", amount="40.00")
    # Then $40 was refunded, once
    payments = lockgate_stack.client("dynamodb").scan(TableName=lockgate_stack.table("ShopPaymentsTable"))[
        "Items"
    ]
    assert [(p["order_id"]["S"], p["amount"].get("S") or p["amount"].get("N")) for p in payments] == [
        ("A-2001", "40.00")
    ]
    # And the run heard what ran and what Alice changed, and told Grace what she actually got, once
    told = decision_told(lockgate_stack.run(run.run_id))
    assert told["decision"] == "edited" and told["changed_by_reviewer"] == {"amount": "40.00"}
    emails = lockgate_stack.emails()
    assert len(emails) == 2 and "we refunded $40.00 on order A-2001" in emails[1]["body"]
