"""The offline stand-in for Claude on the shop's scheduled refund summary.

Given "summarise the refunds of 2026-01-05 (UTC) for the owner, owner@…", it calls list_refunds
for that day, emails the owner a summary built from the result with email_owner, then ends with
a one-line note. Each step is the next call not yet in the conversation, like the shop model.
"""

from __future__ import annotations

import re
from typing import Any

from lockgate_infra.stub.conversation import JSON, find_call, first_user_text, text, tool_use
from lockgate_infra.stub.replies import Reply
from lockgate_infra.stub.shop_reply import money

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


def respond(request: JSON) -> Reply:
    """The next assistant message of a refund-summary run."""
    prompt = first_user_text(request)
    day, owner = DAY.search(prompt), OWNER.search(prompt)
    if day is None or owner is None:
        return Reply([text("I could not tell which day to summarise or who to tell.")], "end_turn")
    list_args = {"day": day.group(1)}
    listed = find_call(request, "list_refunds", list_args)
    if listed is None:
        return Reply(
            [text("Listing the day's refunds."), tool_use(request, 0, "list_refunds", list_args)], "tool_use"
        )
    if not listed.ok:
        return Reply([text(f"Could not list the refunds: {(listed.result or '')[:160]}")], "end_turn")
    email = {
        "to": owner.group(1),
        "subject": f"Refunds on {day.group(1)}",
        "body": summary_body(day.group(1), listed.data()),
    }
    sent = find_call(request, "email_owner", email)
    if sent is None:
        return Reply([text("Emailing the owner."), tool_use(request, 0, "email_owner", email)], "tool_use")
    if not sent.ok:
        return Reply([text(f"Could not email the owner: {(sent.result or '')[:160]}")], "end_turn")
    count = (listed.data() or {}).get("count", 0)
    return Reply(
        [text(f"Sent the refund summary for {day.group(1)} ({count} refunds) to {owner.group(1)}.")],
        "end_turn",
    )
