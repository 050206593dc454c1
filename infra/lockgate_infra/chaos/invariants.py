"""What must hold after a chaos run, judged from the end state of the account, not from our logs.

- every delivery answered 2xx was processed once (done), or set aside with its error at the
  attempt limit; none answered only with errors was processed; nothing forged was stored;
- no refund without a policy pass (the customer's own order, within the approval limit) or an
  approving decision; never two refunds of one order for one email; the order's ``refunded``
  equals its payments; no email to anyone but a customer who wrote in, and no more emails to a
  customer than their processed emails and decided proposals account for;
- no ledger operation left PENDING, IN_PROGRESS or UNKNOWN;
- nothing stuck: no delivery waiting or leased, an empty queue, no undecided proposal, and every
  DLQ message belongs to a delivery marked failed with its error.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from lockgate_infra.chaos.drive import OPEN_OPERATIONS, Tally, queue_depth
from lockgate_infra.chaos.traffic import Delivery, Send
from lockgate_infra.chaos.world import World

APPROVAL_LIMIT = Decimal("50.00")  # the shop's auto-refund ceiling (shop.policies)
DELIVERY = re.compile(r"msg-chaos-\d{4}")


@dataclass
class Findings:
    """The end state, judged."""

    violations: list[str] = field(default_factory=list)
    processed: int = 0
    set_aside: int = 0
    refunds: int = 0
    emails: int = 0

    def fail(self, message: str) -> None:
        """Record one violation."""
        self.violations.append(message)


def judge(world: World, sends: Sequence[Send], tally: Tally) -> Findings:
    """Every invariant over the account's end state."""
    verdict = Findings()
    by_id = {send.delivery_id: send for send in sends}
    inbox = settled(verdict, world, sends)
    _refunds(verdict, world, by_id, inbox, tally)
    _emails(verdict, world, by_id, inbox)
    return verdict


def settled(verdict: Findings, world: World, sends: Sequence[Delivery]) -> dict[str, Any]:
    """What holds of any run: each delivery processed or set aside, nothing stuck, no ledger entry
    left open; returns the inbox's items by key."""
    inbox = {item["pk"]["S"]: item for item in world.scan("InboxTable")}
    dead = [json.loads(m["Body"]) for m in _drain(world, world.names["InboxDLQ"])]
    _deliveries(verdict, sends, inbox, dead)
    _ledger(verdict, world)
    if depth := queue_depth(world):
        verdict.fail(f"stuck: the inbox queue still holds {depth} messages")
    if world.review.listing():
        verdict.fail("stuck: proposals still wait for a decision")
    return inbox


def _deliveries(
    verdict: Findings, sends: Sequence[Delivery], inbox: dict[str, Any], dead: list[dict[str, Any]]
) -> None:
    for send in sends:
        item = inbox.get(f"{send.source}#{send.delivery_id}")
        status = item["status"]["S"] if item else None
        if send.forged:
            if item is not None or any(a != 401 for a in send.answers):
                verdict.fail(
                    f"{send.delivery_id}: forged, answered {send.answers}, stored={item is not None}"
                )
            continue
        if status in ("received", "processing"):
            verdict.fail(f"{send.delivery_id}: stuck {status} (answers {send.answers})")
        elif status == "done":
            verdict.processed += 1
            if not send.acknowledged:
                verdict.fail(f"{send.delivery_id}: processed though every answer was an error {send.answers}")
        elif status == "failed":
            verdict.set_aside += 1
            if not item or not item.get("last_error", {}).get("S"):
                verdict.fail(f"{send.delivery_id}: failed without an error")
        elif send.acknowledged:
            verdict.fail(f"{send.delivery_id}: answered {send.answers} but never stored")
    failed = {pk for pk, item in inbox.items() if item["status"]["S"] == "failed"}
    for message in dead:
        if message.get("pk") not in failed or not message.get("error"):
            status = inbox.get(str(message.get("pk")), {}).get("status", {}).get("S")
            verdict.fail(f"DLQ holds {message} for a delivery that is {status}, not failed with its error")


def _refunds(
    verdict: Findings, world: World, by_id: dict[str, Send], inbox: dict[str, Any], tally: Tally
) -> None:
    orders = {o["order_id"]["S"]: o for o in world.scan("ShopOrdersTable")}
    proposals = world.scan("ApprovalsTable")
    # (A refused click's row has no verdict: lockgate.approvals.refusals.)
    approving = {
        d["approval_id"]["S"]
        for d in world.scan("DecisionsTable")
        if d.get("verdict", {}).get("S") == "approve"
    }
    approved_runs = {
        (p["run_id"]["S"], json.loads(p["args"]["S"])["order_id"])
        for p in proposals
        if p["tool"]["S"] == "refund_order" and p["approval_id"]["S"] in approving
    }
    per_email: Counter[tuple[str, str]] = Counter()
    paid: dict[str, Decimal] = {}
    for row in world.scan("ShopPaymentsTable"):
        verdict.refunds += 1
        order_id, amount = row["order_id"]["S"], Decimal(row["amount"]["N"])
        paid[order_id] = paid.get(order_id, Decimal(0)) + amount
        delivery = _delivery(row.get("run_id", {}).get("S", ""))
        send = by_id.get(delivery or "")
        if send is None or send.forged or inbox.get(f"helpdesk#{delivery}") is None:
            verdict.fail(f"refund on {order_id} for no stored delivery ({delivery})")
            continue
        per_email[(send.delivery_id, order_id)] += 1
        owner = orders[order_id]["customer_email"]["S"]
        if owner != send.mail.sender:
            verdict.fail(f"refund on {order_id} for {send.mail.sender}, who does not own it")
        approved = (row["run_id"]["S"], order_id) in approved_runs
        if amount > APPROVAL_LIMIT and not approved:
            verdict.fail(f"refund of {amount} on {order_id} without an approving decision")
    for (delivery, order_id), count in per_email.items():
        if count > 1:
            verdict.fail(f"{count} refunds of {order_id} for one email {delivery}")
    for order_id, order in orders.items():
        refunded = Decimal(order.get("refunded", {}).get("N", "0"))
        total = paid.get(order_id, Decimal(0))
        if refunded != total:
            verdict.fail(f"order {order_id}: refunded {refunded} but payments add up to {total}")


def _emails(verdict: Findings, world: World, by_id: dict[str, Send], inbox: dict[str, Any]) -> None:
    from moto.core.models import DEFAULT_ACCOUNT_ID
    from moto.ses.models import ses_backends

    reviewers = {r.email.lower() for r in world.config.approvals.reviewers if r.email}
    processed_from: Counter[str] = Counter()
    for delivery, send in by_id.items():
        if not send.forged and f"helpdesk#{delivery}" in inbox:
            processed_from[send.mail.sender] += 1
    for proposal in world.scan("ApprovalsTable"):
        notified = by_id.get(_delivery(proposal["run_id"]["S"]) or "")
        if notified is not None:
            processed_from[notified.mail.sender] += 1  # the decision notice
    received: Counter[str] = Counter()
    for message in ses_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].sent_messages:
        for to in message.destinations.get("ToAddresses", []):
            verdict.emails += 1
            received[to.lower()] += 1
            if to.lower() not in processed_from and to.lower() not in reviewers:
                verdict.fail(f"email to {to}, who never wrote in")
    for address, count in received.items():
        if address in processed_from and count > processed_from[address]:
            verdict.fail(
                f"{count} emails to {address}, more than their {processed_from[address]} emails and notices"
            )


def _ledger(verdict: Findings, world: World) -> None:
    for item in world.scan("StateTable"):
        if item["pk"]["S"].startswith("op#") and item.get("state", {}).get("S") in OPEN_OPERATIONS:
            verdict.fail(f"ledger operation {item.get('tool', {}).get('S')} left {item['state']['S']}")


def _delivery(run_id: str) -> str | None:
    match = DELIVERY.search(run_id)
    return match.group(0) if match else None


def _drain(world: World, queue_url: str) -> list[dict[str, Any]]:
    sqs, out = world.client("sqs"), list[dict[str, Any]]()
    while True:
        got = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10).get("Messages", [])
        if not got:
            return out
        for message in got:
            sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
        out.extend(got)
