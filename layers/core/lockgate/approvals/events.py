"""Approval outcomes as inbox events, so they share the inbox's dedup, lease, retry and DLQ path."""

from __future__ import annotations

import hashlib
import json

from lockgate.errors import QueueUnavailable
from lockgate.inbox.models import Delivery, Status, delivery_key
from lockgate.inbox.queue import InboxQueue
from lockgate.inbox.store import InboxStore
from lockgate.telemetry import Log

DAY = 86_400
SOURCE = "approval"


def approval_event(approval_id: str, kind: str, now: int, available_at: int | None = None) -> Delivery:
    """The inbox item for ``approval#<id>#<kind>`` (approved, rejected, veto); stable, so repeats dedupe."""
    delivery_id = f"{approval_id}#{kind}"
    body = json.dumps({"approval_id": approval_id, "state": kind}).encode()
    return Delivery(
        pk=delivery_key(SOURCE, delivery_id),
        source=SOURCE,
        delivery_id=delivery_id,
        event_type=f"approval.{kind}",
        status=Status.RECEIVED,
        received_at=now,
        available_at=available_at or now,
        body=body,
        body_sha256=hashlib.sha256(body).hexdigest(),
        body_bytes=len(body),
        ttl=now + 14 * DAY,
    )


def enqueue(inbox: InboxStore, queue: InboxQueue, delivery: Delivery, log: Log) -> bool:
    """Store the event once and queue its pointer; True if this call stored it."""
    if not inbox.put_new(delivery).created:
        return False
    delay = max(0, delivery.available_at - delivery.received_at)
    try:
        queue.send(delivery.pk, delay_seconds=min(delay, 900))
    except QueueUnavailable as exc:  # stored: a later duplicate or the inbox sweep re-queues it
        log.error("queue send failed for an approval event", extra={"error": str(exc)})
    return True


class VetoTimer:
    """Schedules the end of a veto window: the event becomes available when the window closes."""

    def __init__(self, inbox: InboxStore, queue: InboxQueue, log: Log) -> None:
        self._inbox = inbox
        self._queue = queue
        self._log = log

    def schedule(self, approval_id: str, now: int, at: int) -> None:
        """An inbox event the worker will pick up at ``at`` (it defers until then)."""
        enqueue(
            self._inbox, self._queue, approval_event(approval_id, "veto", now, available_at=at), self._log
        )
