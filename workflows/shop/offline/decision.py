"""The shop's offline model's answer to a person's decision on its proposal (a task with ``respond=True``).

Lockgate calls ``decision_on_proposal`` for the model when the decision comes; its result says
what was decided (``lockgate.actions.responses.DecisionResponse.tool_result``). The model tells
the customer in one email per decision: a rejection, with the reviewer's words if any; an edited
refund, with what was actually refunded; a call that then failed or was refused, that the team
will follow up. It never proposes the rejected call again. Then it ends with a summary.
"""

from __future__ import annotations

import re
from typing import Any

from lockgate_infra.testing import Conversation, Reply, ToolCall
from shop.offline.reply import money

TOOL = "decision_on_proposal"


def decision_reply(
    turn: Any, sender: str, subject: str, refund: tuple[str, ToolCall | None] | None
) -> Reply | None:
    """The email telling the customer the latest decision, or the summary once it went; None when the
    conversation heard no decision. ``turn`` is the shop model's view of the request."""
    conversation: Conversation = turn.conversation
    made = conversation.calls()
    heard = [n for n, c in enumerate(made) if c.name == TOOL and c.ok and isinstance(c.data(), dict)]
    if not heard or not sender:
        return None
    decision: dict[str, Any] = made[heard[-1]].data()
    outcome = str(decision.get("decision", ""))
    proposed = refund[1] if refund is not None and refund[1] is not None and not refund[1].ok else None
    what = _what(proposed)
    if any(c.name == "send_email" for c in made[heard[-1] + 1 :]):
        about = what.replace("your ", "the customer's ", 1)
        return conversation.say(f"Told {sender} the team's decision ({outcome}) on {about}.")
    lines = [
        f"Hello {_name(sender)},",
        "",
        *_lines(decision, proposed, what),
        "",
        "Kind regards,",
        "Customer support",
    ]
    args = turn.args("send_email", to=sender, subject=subject, body="\n".join(lines))
    reply: Reply = turn.ask(f"A person decided on {what}; telling {sender}.", [("send_email", args)])
    return reply


def _what(proposed: ToolCall | None) -> str:
    """The proposal in the customer's words: the refund it asked for, else "your request"."""
    if proposed is None or proposed.name != "refund_order":
        return "your request"
    amount = proposed.input.get("amount")
    asked = f" of {money(amount, 'USD')}" if amount is not None else ""
    return f"your refund request{asked} for order {proposed.input.get('order_id', '')}".rstrip()


def _lines(decision: dict[str, Any], proposed: ToolCall | None, what: str) -> list[str]:
    outcome = decision.get("decision")
    if outcome == "rejected":
        lines = [f"Our team reviewed {what} and could not approve it."]
        said = _without_names(str(decision.get("reviewer_said", "")), decision.get("by") or [])
        if said:
            lines.append(f"The reviewer's note: {said[:300]}")
        return [*lines, "Reply to this email if you have any questions."]
    ran = _dict(decision.get("ran_with"))
    result = _dict(decision.get("result"))
    if outcome == "edited" and proposed is not None and proposed.name == "refund_order":
        refunded = money(result.get("refunded", ran.get("amount")), result.get("currency", "USD"))
        order = ran.get("order_id", proposed.input.get("order_id", ""))
        return [
            f"Our team approved {what} with a change: we refunded {refunded} on order {order}.",
            "It will reach your original payment method within 5 to 10 business days.",
        ]
    if outcome == "edited":
        return [f"Our team approved {what} with a change, and it has been done."]
    return [
        f"Our team approved {what}, but it could not be completed.",
        "A person from our team will follow up.",
    ]


def _without_names(said: str, by: list[Any]) -> str:
    """The reviewers' words without who said them ("bob: item was used"): names stay in the team."""
    for name in by:
        said = said.replace(f"{name}: ", "")
    return said.strip()


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _name(sender: str) -> str:
    return re.split(r"[._+\-\d]", sender.split("@", maxsplit=1)[0])[0].capitalize() or "there"
