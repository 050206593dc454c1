"""The shop's refund rules end to end on the embedded stack, through the real functions: "over $100
needs two people from the refunds team" is one rule in lockgate.toml, it is shown on every screen,
and it is judged on the version that runs; an edit is checked by the worker (asked over the local
Lambda Invoke, as deployed) before anything is recorded, and every screen afterwards names what ran.
"""

from __future__ import annotations

import json
import re

import pytest

from lockgate.approvals.decisions import DecisionStore
from lockgate_infra.local.approval_walk import decide, local_signer
from lockgate_infra.testing import ScriptedModel, TestStack, when

ADA = "ada@example.com"


def asks_refund(order: str, amount: str) -> dict[str, str]:
    return {
        "message_id": f"m-{order}-{amount}",
        "from": ADA,
        "subject": f"Refund for {order}",
        "text": f"Please refund my order {order}. Ada",
    }


@pytest.fixture
def lockgate_model() -> ScriptedModel:
    """The support-inbox task, scripted: read the email, refund the order it names in full."""
    return ScriptedModel(
        "support-inbox",
        when(r"message_id=(?P<message>[^\s,.]+)").call("read_email", message_id="{message}"),
        when(r"(?P<order>A-1043)", after="read_email").call(
            "refund_order", order_id="{order}", amount="120.00", reason="customer asked"
        ),
        finish="Refund of {order} handled.",
        extract={"order_id": "{order}", "intent": "refund", "amount": None},
    )


def link(stack: TestStack, proposal: object, reviewer: str) -> str:
    config = stack._configured().approvals  # noqa: SLF001 - the stack's own config, as its notifier reads it
    return local_signer(stack.local, config, f"{stack.gateway_url}/approvals").links_for(proposal)[reviewer]  # type: ignore[arg-type]


def test_a_refund_over_100_needs_two_people_from_refunds_and_the_page_says_which_rule(
    lockgate_stack: TestStack,
) -> None:
    # Given ada asks for her $120 order back
    lockgate_stack.send("helpdesk", asks_refund("A-1043", "120"))
    (proposal,) = lockgate_stack.proposals()
    # Then the proposal needs two people by the named rule, and says so
    assert proposal.requirement is not None
    assert proposal.requirement.describe() == "2 reviewers with the role refunds (rule: refunds over $100)"
    assert "refunds over $100 need two people from the refunds team (rule: refunds over $100)" in proposal.why
    # When alice approves, nothing runs; when bob approves too, it runs once
    steps = lockgate_stack.approve(proposal, as_="alice")
    assert steps[-1].title == "Approval recorded" and not lockgate_stack.ledger.ran("refund_order")
    lockgate_stack.approve(proposal, as_="bob")
    assert lockgate_stack.ledger.count("refund_order") == 1


def test_an_edit_under_100_needs_one_person_and_every_screen_names_the_refund_that_ran(
    lockgate_stack: TestStack,
) -> None:
    # Given ada's $120 refund, which needs two people
    lockgate_stack.send("helpdesk", asks_refund("A-1043", "120"))
    (proposal,) = lockgate_stack.proposals()
    # When alice approves it changed to $90.00 (the worker checks the edit over Lambda Invoke first)
    steps = lockgate_stack.edit(proposal, as_="alice", amount="90")
    # Then her approval alone settles it (under $100, one person), and the answer names what runs
    assert steps[-1].title == "Approved"
    standing = DecisionStore(
        lockgate_stack.client("dynamodb"), lockgate_stack.table("DecisionsTable")
    ).standing(proposal.approval_id)
    (version,) = standing.versions
    assert version.args["amount"] == "90.00"  # typed "90", stored and shown with the currency's decimals
    assert version.summary == "refund $90.00 USD on order A-1043"  # the tool's own, from the worker's check
    assert version.requirement is not None and version.requirement.reviewers_required == 1
    # And $90 ran, once; the run that proposed it (the shop responds) is told what ran, as edited
    (operation,) = [op for op in lockgate_stack.operations() if op.tool == "refund_order"]
    assert operation.state.value == "SUCCEEDED"
    assert operation.summary == "refund $90.00 USD on order A-1043 (edited by alice, approved by alice)"
    (heard,) = [
        step
        for step in lockgate_stack.run(proposal.run_id.removeprefix("run#")).steps
        if step.kind == "decision"
    ]
    told = json.loads(heard.data["result"]["content"])
    assert (told["decision"], told["ran_with"]["amount"], told["changed_by_reviewer"]) == (
        "edited",
        "90.00",
        {"amount": "90.00"},
    )
    # And the link, opened again, shows what ran, who edited it, and that it ran
    decided = decide(link(lockgate_stack, proposal, "bob"), "approve")
    assert decided[0].status == 409 and decided[0].title == "Already approved"


def test_an_edit_the_worker_would_refuse_is_refused_before_anything_is_recorded(
    lockgate_stack: TestStack,
) -> None:
    # Given ada's $120 refund (the order's total)
    lockgate_stack.send("helpdesk", asks_refund("A-1043", "120"))
    (proposal,) = lockgate_stack.proposals()
    # When alice tries to raise it above what the order allows
    steps = lockgate_stack.edit(proposal, as_="alice", amount="150")
    # Then it is refused with the policy's words, and no version or decision is written
    assert steps[-1].status == 422 and steps[-1].title == "Not approved: the change is not allowed"
    standing = DecisionStore(
        lockgate_stack.client("dynamodb"), lockgate_stack.table("DecisionsTable")
    ).standing(proposal.approval_id)
    assert standing.versions == [] and standing.decisions == []
    assert not lockgate_stack.ledger.ran("refund_order")


def test_an_amount_typed_in_another_scripts_digits_is_refused_not_stored_as_typed(
    lockgate_stack: TestStack,
) -> None:
    lockgate_stack.send("helpdesk", asks_refund("A-1043", "120"))
    (proposal,) = lockgate_stack.proposals()
    steps = lockgate_stack.edit(proposal, as_="alice", amount="৪0.00")
    assert steps[-1].status == 422
    standing = DecisionStore(
        lockgate_stack.client("dynamodb"), lockgate_stack.table("DecisionsTable")
    ).standing(proposal.approval_id)
    assert standing.versions == [] and re.search("৪", str(standing)) is None
