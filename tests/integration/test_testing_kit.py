"""The test kit (``lockgate_infra.testing``): the fixtures a workflow's own tests get, used as a user would.

Given through the pytest plugin (``lockgate_model`` overridden here, ``lockgate_stack`` as is): a
delivery signed as its provider signs it, the agent's run, the proposal, a named reviewer's
approval through their own link, the ledger and the emails SES recorded.
"""

from __future__ import annotations

import pytest

from lockgate_infra.testing import ScriptedModel, TestStack, TestStackError, when

REFUND = {
    "message_id": "m-refund-1",
    "from": "grace@example.com",
    "subject": "Broken blanket",
    "text": "My order A-2001 arrived broken. Please refund it.",
}


@pytest.fixture
def lockgate_model() -> ScriptedModel:
    """The shop's support-inbox task, scripted: read the email, refund the order it names."""
    return ScriptedModel(
        "support-inbox",
        when(r"message_id=(?P<message>[^\s,.]+)").call("read_email", message_id="{message}"),
        when(r"(?P<order>A-\d{4})", after="read_email").call(
            "refund_order", order_id="{order}", amount="80.00", reason="arrived broken"
        ),
        finish="Refund of {order} handled.",
        extract={"order_id": "{order}", "intent": "refund", "amount": None},
    )


def test_a_signed_delivery_runs_the_task_and_a_refund_waits_for_a_person(lockgate_stack: TestStack) -> None:
    sent = lockgate_stack.send("helpdesk", REFUND, event="email", delivery_id="m-refund-1")

    assert sent.status == 200 and sent.key == "helpdesk#m-refund-1"
    assert lockgate_stack.delivery(sent).status.value == "done"
    run = lockgate_stack.run(sent)
    assert run.status == "completed" and run.outcome == "Refund of A-2001 handled."
    (proposal,) = lockgate_stack.proposals()
    assert proposal.summary == "refund $80.00 USD on order A-2001"
    assert not lockgate_stack.ledger.ran("refund_order")


def test_a_named_reviewer_approves_through_their_link_and_the_action_runs_once(
    lockgate_stack: TestStack,
) -> None:
    lockgate_stack.send("helpdesk", REFUND, event="email", delivery_id="m-refund-1")
    (proposal,) = lockgate_stack.proposals()

    steps = lockgate_stack.approve(proposal, as_="alice")

    assert [(s.status, s.title) for s in steps] == [
        (200, "refund $80.00 USD on order A-2001"),
        (200, "Approved"),
    ]
    assert lockgate_stack.ledger.count("refund_order") == 1
    assert [e["to"] for e in lockgate_stack.emails() if e["subject"] == "An update on your request"] == [
        ["grace@example.com"]
    ]


def test_a_rejection_never_runs_and_an_unknown_reviewer_is_a_clear_error(lockgate_stack: TestStack) -> None:
    lockgate_stack.send("helpdesk", REFUND, event="email", delivery_id="m-refund-1")
    (proposal,) = lockgate_stack.proposals()

    with pytest.raises(
        TestStackError, match="'mallory' gets no link for refund_order: the reviewers who do are"
    ):
        lockgate_stack.approve(proposal, as_="mallory")
    lockgate_stack.reject(proposal, as_="bob")

    assert not lockgate_stack.ledger.ran("refund_order")


def test_a_forged_delivery_is_refused_and_stores_nothing(lockgate_stack: TestStack) -> None:
    sent = lockgate_stack.send("helpdesk", REFUND, event="email", secret="whsec_bm90IHRoZSBzZWNyZXQ=")

    assert sent.status == 401
    assert lockgate_stack.client("dynamodb").scan(TableName=lockgate_stack.table("InboxTable"))["Count"] == 0


def test_the_model_can_change_between_steps_and_the_default_is_the_shop_demo_model(
    lockgate_stack: TestStack,
) -> None:
    from lockgate_infra.stub import shop_model

    lockgate_stack.model = shop_model
    sent = lockgate_stack.send(
        "helpdesk",
        {
            "message_id": "m-where",
            "from": "ada@example.com",
            "subject": "Where is A-1042?",
            "text": "Where is A-1042?",
        },
        event="email",
        delivery_id="m-where",
    )

    assert lockgate_stack.run(sent).outcome.startswith("Replied to ada@example.com about A-1042")
