"""The tickets example on the embedded stack, with its scripted model and its MCP server's stand-in (the
example ticketing service the workflow's ``local_stand_ins`` gives): what a person sees, and what the
service did, once."""

from __future__ import annotations

import pytest
from tickets.model import scripted_model

from lockgate_infra.mcp_example import McpExample
from lockgate_infra.testing import ScriptedModel, TestStack, when

OPENED = {"type": "ticket.opened", "data": {"ticket_id": "T-1"}}  # T-1: "The mug was in pieces."


@pytest.fixture
def lockgate_model() -> ScriptedModel:
    """The model lockgate_stack's tasks talk to: the tickets workflow's own scripted model."""
    return scripted_model()


def service(stack: TestStack) -> McpExample:
    """The ticketing service's stand-in, by the variable lockgate.toml's url names."""
    played: McpExample = stack.stand_ins["TICKETS_MCP_URL"]
    return played


def test_a_damaged_parcel_gets_a_credit_and_a_comment_each_once_after_a_person_approves(
    lockgate_stack: TestStack,
) -> None:
    sent = lockgate_stack.send("tickets", OPENED)
    # The ticket was read at once; the credit and the comment wait, and the service did nothing yet
    assert [seen.tool for seen in service(lockgate_stack).calls()] == ["get_ticket"]
    proposals = {p.tool: p for p in lockgate_stack.proposals()}
    assert proposals["tickets__issue_credit"].summary == "credit 1500 cents on ticket T-1"
    assert "untrusted content (tickets__get_ticket" in proposals["tickets__add_comment"].why[0]
    assert service(lockgate_stack).desk.effects == []

    for proposal in proposals.values():
        lockgate_stack.approve(proposal, as_="alice")

    desk = service(lockgate_stack).desk
    assert sorted(e.tool for e in desk.effects) == ["add_comment", "issue_credit"]
    assert all(desk.acted(e.key) == 1 for e in desk.effects if e.key)
    assert desk.tickets["T-1"].credited_cents == 1500
    assert lockgate_stack.ledger.count("tickets__issue_credit") == 1
    assert lockgate_stack.run(sent).outcome == "Asked for what ticket T-1 needs; a person approves it."


def test_a_credit_over_the_cap_is_refused_in_code_and_never_reaches_the_service(
    lockgate_stack: TestStack,
) -> None:
    # Given a model that asks for more than the task's $50.00 cap
    lockgate_stack.model = ScriptedModel(
        "tickets",
        when(r"ticket=(?P<ticket>[\w-]+)").call("tickets__get_ticket", ticket_id="{ticket}"),
        when(r"in pieces", after="tickets__get_ticket").call(
            "tickets__issue_credit", ticket_id="{ticket}", amount_cents=9000
        ),
    )

    sent = lockgate_stack.send("tickets", OPENED)

    (credit,) = [
        call
        for step in lockgate_stack.run(sent).steps
        if step.kind == "tools"
        for call in step.data["calls"]
        if call["tool"] == "tickets__issue_credit"
    ]
    assert credit["check"] == "policy" and "at most 5000 cents" in credit["reason"]
    assert lockgate_stack.proposals() == []
    assert [seen.tool for seen in service(lockgate_stack).calls()] == ["get_ticket"]
