"""The shop's offline stand-in for Claude on its scheduled refund summary.

Given "summarise the refunds of 2026-01-05 (UTC) for the owner, owner@…", it calls list_refunds
for that day, emails the owner a summary built from the result with email_owner, then ends with
a one-line note. Each step is the next call not yet in the conversation, like the shop model.
Written by hand, not as a ``ScriptedModel``: its email is composed from the listed refunds, and
a step that failed ends the run saying so.
"""

from __future__ import annotations

import re
from typing import Any

from lockgate_infra.testing import Conversation, Reply
from shop.offline.reply import money

DAY = re.compile(r"refunds of (\d{4}-\d{2}-\d{2})")
OWNER = re.compile(r"for the owner, ([\w.+-]+@[\w-]+(?:\.[\w-]+)+)")


def summary_body(day: str, listed: Any) -> str:
    """The email: count and total, then one line per refund (or a line saying there were none)."""
    data = listed if isinstance(listed, dict) else {}
    refunds = [r for r in data.get("refunds") or [] if isinstance(r, dict)]
    if not refunds:
        return f"No refunds were made on {day}.\n\nLockgate"
    lines = [f"{len(refunds)} refund(s) on {day}, {money(data.get('total'), 'USD')} in total:", ""]
    lines += [
        f"- {r.get('order_id')}: {money(r.get('amount'), r.get('currency'))} ({r.get('reason', '')})"
        for r in refunds
    ]
    return "\n".join([*lines, "", "Lockgate"])


def respond(conversation: Conversation) -> Reply:
    """The next assistant message of a refund-summary run."""
    day, owner = DAY.search(conversation.prompt), OWNER.search(conversation.prompt)
    if day is None or owner is None:
        return conversation.say("I could not tell which day to summarise or who to tell.")
    list_args = {"day": day.group(1)}
    listed = conversation.find("list_refunds", list_args)
    if listed is None:
        return conversation.ask("Listing the day's refunds.", [("list_refunds", list_args)])
    if not listed.ok:
        return conversation.say(f"Could not list the refunds: {(listed.result or '')[:160]}")
    email = {
        "to": owner.group(1),
        "subject": f"Refunds on {day.group(1)}",
        "body": summary_body(day.group(1), listed.data()),
    }
    sent = conversation.find("email_owner", email)
    if sent is None:
        return conversation.ask("Emailing the owner.", [("email_owner", email)])
    if not sent.ok:
        return conversation.say(f"Could not email the owner: {(sent.result or '')[:160]}")
    count = (listed.data() or {}).get("count", 0)
    return conversation.say(
        f"Sent the refund summary for {day.group(1)} ({count} refunds) to {owner.group(1)}."
    )
