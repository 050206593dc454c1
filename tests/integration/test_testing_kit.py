"""The test kit (``lockgate_infra.testing``): the fixtures a workflow's own tests get, used as a user would.

Given through the pytest plugin (``lockgate_model`` overridden here, ``lockgate_stack`` as is): a
delivery signed as its provider signs it, the agent's run, the proposal, a named reviewer's
approval through their own link, the ledger and the emails SES recorded.
"""

from __future__ import annotations

import re

import pytest

from lockgate_infra.testing import ScriptedModel, Sent, TestStack, TestStackError, when

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
    sent = lockgate_stack.send("helpdesk", REFUND, delivery_id="m-refund-1")

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
    lockgate_stack.send("helpdesk", REFUND, delivery_id="m-refund-1")
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
    lockgate_stack.send("helpdesk", REFUND, delivery_id="m-refund-1")
    (proposal,) = lockgate_stack.proposals()

    with pytest.raises(
        TestStackError, match="'mallory' gets no link for refund_order: the reviewers who do are"
    ):
        lockgate_stack.approve(proposal, as_="mallory")
    lockgate_stack.reject(proposal, as_="bob")

    assert not lockgate_stack.ledger.ran("refund_order")


def test_a_forged_delivery_is_refused_and_stores_nothing(lockgate_stack: TestStack) -> None:
    sent = lockgate_stack.send("helpdesk", REFUND, secret="whsec_bm90IHRoZSBzZWNyZXQ=")

    assert sent.status == 401 and not sent.stored
    assert lockgate_stack.client("dynamodb").scan(TableName=lockgate_stack.table("InboxTable"))["Count"] == 0


def test_the_model_can_change_between_steps_and_the_default_is_the_shop_demo_model(
    lockgate_stack: TestStack,
) -> None:
    from shop.model import scripted_model

    lockgate_stack.model = scripted_model()
    sent = lockgate_stack.send(
        "helpdesk",
        {
            "message_id": "m-where",
            "from": "ada@example.com",
            "subject": "Where is A-1042?",
            "text": "Where is A-1042?",
        },
        delivery_id="m-where",
    )

    assert lockgate_stack.run(sent).outcome.startswith("Replied to ada@example.com about A-1042")


def test_each_source_is_keyed_as_the_receiver_keys_it_and_send_returns_that_key(
    lockgate_stack: TestStack,
) -> None:
    # Given one delivery from each kind of source, in its provider's own shape, with no delivery_id
    sent = {
        "stripe": lockgate_stack.send(
            "stripe",
            {"id": "evt_1Kit", "object": "event", "type": "invoice.paid", "data": {"object": {"id": "in_1"}}},
            event="invoice.paid",
        ),
        "slack": lockgate_stack.send(
            "slack",
            {
                "type": "event_callback",
                "event_id": "Ev0KIT",
                "event": {"type": "reaction_added", "user": "U1"},
            },
            event="reaction_added",
        ),
        "github": lockgate_stack.send(
            "github", {"action": "closed", "issue": {"number": 3}}, event="issues.closed", delivery_id="gh-1"
        ),
        "shopify": lockgate_stack.send(
            "shopify", {"id": 450789469}, event="orders/create", delivery_id="sh-1"
        ),
        "partner": lockgate_stack.send("partner", {"type": "invoice.paid"}, delivery_id="p-1"),
    }
    # Then each key is the one the inbox stored, with the provider's id and event type
    assert {source: s.key for source, s in sent.items()} == {
        "stripe": "stripe#evt_1Kit",
        "slack": "slack#Ev0KIT",
        "github": "github#gh-1",
        "shopify": "shopify#sh-1",
        "partner": "partner#p-1",
    }
    stored = {source: lockgate_stack.delivery(s) for source, s in sent.items()}
    assert {source: d.event_type for source, d in stored.items()} == {
        "stripe": "invoice.paid",
        "slack": "reaction_added",
        "github": "issues.closed",
        "shopify": "orders/create",
        "partner": "invoice.paid",
    }
    # And asking for a run names what the worker recorded instead of guessing
    with pytest.raises(TestStackError, match=r"no agent run for stripe#evt_1Kit: the worker recorded "
                       r"\"no task for stripe event 'invoice.paid'\" \(no task ran\)"):  # fmt: skip
        lockgate_stack.run(sent["stripe"])


@pytest.mark.parametrize(
    ("source", "body", "options", "says"),
    [
        (
            "stripe",
            {"id": "evt_2", "type": "invoice.paid"},
            {"delivery_id": "mine"},
            "stripe takes the delivery id from the body's \"id\": this body's is 'evt_2', not delivery_id=",
        ),
        (
            "stripe",
            {"id": "evt_3", "type": "invoice.paid"},
            {"event": "charge.dispute.created"},
            "stripe takes the event type from the body's \"type\": this body's is 'invoice.paid'",
        ),
        (
            "helpdesk",
            {"from": "a@example.com"},
            {"event": "email"},
            "helpdesk takes the event type from the body's \"type\": this body's is 'unknown', not event=",
        ),
    ],
    ids=["stripe id", "stripe type", "standard type"],
)
def test_an_argument_the_providers_body_contradicts_is_refused_before_sending(
    lockgate_stack: TestStack, source: str, body: dict[str, str], options: dict[str, str], says: str
) -> None:
    with pytest.raises(TestStackError, match=re.escape(says)):
        lockgate_stack.send(source, body, **options)

    assert lockgate_stack.client("dynamodb").scan(TableName=lockgate_stack.table("InboxTable"))["Count"] == 0


def test_a_delivery_the_receiver_refuses_says_why_when_asked_for_its_run(lockgate_stack: TestStack) -> None:
    # Given a Stripe event without its id, which the receiver cannot key
    sent = lockgate_stack.send("stripe", {"type": "invoice.paid"})

    assert (sent.status, sent.stored) == (400, False)
    with pytest.raises(
        TestStackError, match=re.escape('the receiver answered 400 {"error":"bad delivery: no event id"}')
    ):
        lockgate_stack.run(sent)
    assert isinstance(sent, Sent)
