"""Closing the loop with the customer after a person decided on their request."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lockgate import DecisionNotice, ToolContext
from shop.arguments import SendEmailArgs
from shop.replies import send_email

# A rejection or an edit goes back to the run (the task sets respond=True); the model tells the
# customer, with the reviewer's reason or what was actually refunded. This hook tells the rest, and
# a rejection or an edit's outcome that no run could hear (its run had ended cut off, say).
TEXTS = {
    "done": "Good news: our team approved your request ({summary}) and it has been done.",
    "rejected": "Our team reviewed your request ({summary}) and could not approve it. "
    "Reply to this email if you have any questions.",
    "expired": "Your request ({summary}) was passed to our team but could not be completed in time. "
    "Reply to this email and we will look at it again.",
}
FALLBACK = "We could not complete your request ({summary}) just now; our team will follow up."


def tell_customer(notice: DecisionNotice, services: Mapping[str, Any]) -> dict[str, Any]:
    """Email the customer the outcome; the text is built by code, never by the model."""
    if notice.tool == "send_email":
        # A held reply is itself what the customer hears, once approved. A notice would quote its
        # summary, the subject written after reading the email, past send_email's own rules.
        return {"status": "not sent", "why": "the decision was on a reply to the customer itself"}
    body = TEXTS.get(notice.outcome, FALLBACK).format(summary=notice.summary) + "\n\nExample Shop support"
    args = SendEmailArgs(
        to=str(notice.facts.get("customer_email")), subject="An update on your request", body=body
    )
    key = f"notice#{notice.approval_id}#{notice.outcome}"
    return send_email(args, ToolContext(notice.run_id, notice.facts, key, services))
