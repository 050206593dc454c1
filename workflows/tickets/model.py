"""An offline model for the tickets task: it answers by rules, so tests and the local stack need no Claude.

Use it with `lockgate local --model tickets.model:scripted_model`.
"""

from __future__ import annotations

from lockgate_infra.testing import ScriptedModel, call, when


def scripted_model() -> ScriptedModel:
    """Read the ticket; damaged goods get a credit and a comment, an address change a comment."""
    return ScriptedModel(
        "tickets",
        when(r"ticket=(?P<ticket>[\w-]+)").call("tickets__get_ticket", ticket_id="{ticket}"),
        when(r"(?i)damaged|in pieces|broken", after="tickets__get_ticket").calls(
            call("tickets__issue_credit", ticket_id="{ticket}", amount_cents=1500),
            call(
                "tickets__add_comment",
                ticket_id="{ticket}",
                body="Sorry it arrived damaged: we are crediting you $15.00.",
            ),
        ),
        when(r"(?i)where is my order", after="tickets__get_ticket").call(
            "tickets__add_comment",
            ticket_id="{ticket}",
            body="Your order is on its way: tracking follows by email.",
        ),
        finish="Asked for what ticket {ticket} needs; a person approves it.",
    )
