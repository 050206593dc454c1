"""Events Lockgate makes itself (approval outcomes, schedule ticks) enter the inbox like webhooks do.

A stable key makes a repeat harmless: the conditional put stores it once, and only the call that
stored it queues the pointer.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace

from lockgate.errors import QueueUnavailable
from lockgate.inbox.models import Delivery, Status, delivery_key
from lockgate.inbox.queue import InboxQueue
from lockgate.inbox.store import InboxStore
from lockgate.telemetry import Log

DAY = 86_400
RETENTION_DAYS = 14


def internal_event(  # noqa: PLR0913 - an event's parts
    source: str,
    delivery_id: str,
    event_type: str,
    body: bytes,
    now: int,
    available_at: int | None = None,
    *,
    trace: str | None = None,
) -> Delivery:
    """The inbox item ``{source}#{delivery_id}`` with a JSON body, kept as long as webhook deliveries.

    ``trace``: the ``traceparent`` of the span that made it, so its run joins that trace.
    """
    return Delivery(
        pk=delivery_key(source, delivery_id),
        source=source,
        delivery_id=delivery_id,
        event_type=event_type,
        status=Status.RECEIVED,
        received_at=now,
        available_at=available_at or now,
        body=body,
        body_sha256=hashlib.sha256(body).hexdigest(),
        body_bytes=len(body),
        content_type="application/json",
        ttl=now + RETENTION_DAYS * DAY,
        trace=trace,
    )


def enqueue(inbox: InboxStore, queue: InboxQueue, delivery: Delivery, log: Log) -> bool:
    """Store the event once and queue its pointer; True if this call stored it."""
    if not inbox.put_new(delivery).created:
        return False
    delay = max(0, delivery.available_at - delivery.received_at)
    try:
        queue.send(delivery.pk, delay_seconds=min(delay, 900))
    except QueueUnavailable as exc:  # stored: a later duplicate or the inbox sweep re-queues it
        log.error(
            "queue send failed for an internal event", extra={"delivery": delivery.pk, "error": str(exc)}
        )
    return True


def replay_event(original: Delivery, n: int, now: int, by: str) -> Delivery:
    """The ``n``th replay of a done delivery: a new inbox item ``{pk}#replay{n}`` that routes like it.

    Same source, event type, body (or body pointer) and provider event time, so the same handler
    runs it; a new key, so it is a new run; ``replay_of`` and ``replayed_by`` record who asked.
    """
    kept = None if original.ttl is None else now + max(0, original.ttl - original.received_at)
    return replace(
        original,
        pk=f"{original.pk}#replay{n}",
        delivery_id=f"{original.delivery_id}#replay{n}",
        status=Status.RECEIVED,
        received_at=now,
        available_at=now,
        attempts=0,
        deferrals=0,
        lease_owner=None,
        lease_expires_at=None,
        last_error=None,
        outcome=None,
        updated_at=None,
        ttl=kept,
        replay_of=original.pk,
        replayed_by=by,
    )
