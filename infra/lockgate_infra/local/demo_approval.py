"""The demo's last act: the links the notifier sent, in a section of their own, then a person approves
the waiting refund through their link, over HTTP as a browser does; it runs once (the tickets run's
proposals are approved the same way: ``demo_tickets``).

The links are the ones the approval notifier printed (``APPROVAL_CHANNELS=print``, one per
reviewer), collected from its output while the demo ran instead of interleaving with the tables.
"""

from __future__ import annotations

import re
import threading
from typing import TextIO

from lockgate_infra.local.approval_walk import page_text, pending_proposals, walk
from lockgate_infra.local.stack import LocalStack

# The print channel's line (lockgate.approvals.notify.PrintChannel): reviewer, summary, link.
PRINTED = re.compile(r"^\[approval\] (?P<reviewer>[^:]+): (?P<summary>.*) -> (?P<link>https?://\S+)$")


class SentLinks:
    """The links the notifier printed while the demo ran (a watcher of the functions' output)."""

    def __init__(self) -> None:
        self.links: list[tuple[str, str, str]] = []  # (reviewer, summary, link), in the order sent
        self._lock = threading.Lock()

    def __call__(self, function: str, line: str) -> None:
        del function  # whichever function printed it
        found = PRINTED.match(line.strip())
        if found is not None:
            with self._lock:
                self.links.append((found["reviewer"], found["summary"], found["link"]))

    def show(self, out: TextIO) -> None:
        """The section: one entry per link, the link alone on its line."""
        # Deployed, each reviewer gets theirs by email or Slack; locally the notifier prints them.
        print("\nApproval links sent (one per reviewer; deployed, they go by email or Slack)", file=out)
        for reviewer, summary, link in self.links:
            print(f"  {reviewer}: {summary}\n    {link}", file=out)

    def of(self, reviewer: str, summary: str | None = None) -> str | None:
        """The last link sent to ``reviewer`` (for a proposal reading ``summary``)."""
        return next(
            (link for who, said, link in reversed(self.links) if who == reviewer and summary in (None, said)),
            None,
        )

    def order(self, summary: str) -> int:
        """When the first link for a proposal reading ``summary`` was sent (0 first; never: last)."""
        return next((i for i, (_, said, _) in enumerate(self.links) if said == summary), len(self.links))


def approve_refund(stack: LocalStack, sent: SentLinks, out: TextIO) -> bool:
    """alice opens the link she was sent and approves; it runs once, a second click does nothing."""
    from moto.core.models import DEFAULT_ACCOUNT_ID
    from moto.ses.models import ses_backends

    everything = pending_proposals(stack)
    print(f"\nWaiting for a person: {len(everything)} proposal(s)", file=out)
    proposals = [p for p in everything if p.tool == "refund_order"]
    link = sent.of("alice", proposals[0].summary) if proposals else None
    if link is None:
        print("  no approval link for the refund was sent to alice", file=out)
    if len(proposals) != 1 or link is None:
        return False
    (proposal,) = proposals
    print(f"  {proposal.summary} (why: {'; '.join(proposal.why)})", file=out)
    print("  alice opens the link she was sent:", file=out)
    html = page_text(link)
    shown = proposal.summary in html and "unverified" in html
    for step in walk(link):
        print(f"  {step.status}  {step.label:<40} {step.title}", file=out)
    stack.drain(timeout=30)
    payments = stack.client("dynamodb").scan(TableName=stack.resources["ShopPaymentsTable"])["Items"]
    refunded = [
        (p["order_id"]["S"], p.get("amount", {}).get("S") or p.get("amount", {}).get("N")) for p in payments
    ]
    print(f"  refunds recorded after approval: {refunded}", file=out)
    updates = [
        m
        for m in ses_backends[DEFAULT_ACCOUNT_ID][stack.region].sent_messages
        if m.subject == "An update on your request"
    ]
    for message in updates:
        to = ", ".join(message.destinations.get("ToAddresses", []))
        print(f"  then emailed {to}: {message.body.splitlines()[0]}", file=out)
    return shown and len(payments) == 1 and len(updates) == 1
