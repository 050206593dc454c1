"""What a ScriptedModel's rules read on the real agent loop: the facts its reference states.

A result is the tool's return value as JSON with sorted keys and ", " / ": " between items; an
error result is its text; the captures of every rule that matches combine within a turn.
"""

from __future__ import annotations

from typing import Any

from lockgate import Tool, ToolContext, ToolError
from lockgate_infra.testing import ScriptedModel, when
from tests.agent.conftest import AgentRig, event
from tests.agent.toolkit import Effects, LookupArgs, make_task, make_tools


def price(args: LookupArgs, ctx: ToolContext) -> Any:
    """An item's price, its keys out of order (the loop sorts them)."""
    if args.item_id == "I-999":
        raise ToolError("No item called 'I-999'. Item ids look like I-123.")
    return {"price": 10, "item_id": args.item_id, "note": "été"}


DEADLINE = 10**10


def test_given_the_real_loop_then_rules_read_results_as_sorted_json_and_errors_as_their_text(
    rig: AgentRig,
) -> None:
    # Given rules that match only the exact text the loop sends back
    model = ScriptedModel(
        "test-task",
        when(r"^Handle event (?P<event>[\w-]+)\.$").call("lookup", item_id="I-999"),
        # A ToolError's result is its message, as written
        when(r"^No item called 'I-999'\. Item ids look like (?P<example>I-\d+)\.$", after="lookup").call(
            "lookup", item_id="{example}"
        ),
        # A value is JSON: keys sorted, ", " and ": " between items
        when(r'^\{"item_id": "I-123", "note": "été", "price": (?P<price>\d+)\}$', after="lookup").call(
            "send", to="owner@example.com", text="{event}: I-123 costs {price}"
        ),
        finish="Priced for {event}.",
    )
    rig.stub.set_model(model)
    effects = Effects()
    tools = [Tool("lookup", "Price an item.", LookupArgs, price, lambda a: f"price {a.item_id}")]
    tools += [t for t in make_tools(effects) if t.name == "send"]

    outcome = rig.loop().run(make_task(effects, tools=tools), event("d-7"), DEADLINE)

    # Then each rule matched in turn, and the send used captures of the prompt's rule and the result's
    assert (outcome.status, outcome.summary) == ("completed", "Priced for d-7.")
    assert [(s["to"], s["text"]) for s in effects.sent] == [("owner@example.com", "d-7: I-123 costs 10")]
