"""Operating the inbox: status, one delivery, operator retries."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lockgate.errors import NotClaimable
from lockgate.inbox.models import Delivery, Status
from lockgate.inbox.queue import InboxQueue
from lockgate.inbox.store import InboxStore


@dataclass(frozen=True)
class InboxStatus:
    """Counts per status, the oldest waiting delivery, the DLQ depth and recent failures."""

    counts: dict[str, int]
    oldest_waiting_seconds: int | None
    dead_letters: int
    failed: list[dict[str, Any]]

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "counts": self.counts,
            "oldest_waiting_seconds": self.oldest_waiting_seconds,
            "dead_letters": self.dead_letters,
            "failed": self.failed,
        }


class InboxOps:
    """What `lockgate inbox ...` does, against any target's clients."""

    def __init__(self, store: InboxStore, queue: InboxQueue, sqs: Any, dlq_url: str) -> None:
        self._store = store
        self._queue = queue
        self._sqs = sqs
        self._dlq_url = dlq_url

    def status(self, now: int, failed_limit: int = 20) -> InboxStatus:
        """A summary an operator can act on."""
        counts = {status.value: n for status, n in self._store.count_by_status().items()}
        # One item from the index, oldest first: no need to read every waiting delivery.
        waiting = self._store.list_by_status(Status.RECEIVED, limit=1, oldest_first=True)
        oldest = waiting[0].received_at if waiting else None
        attrs = self._sqs.get_queue_attributes(
            QueueUrl=self._dlq_url, AttributeNames=["ApproximateNumberOfMessages"]
        )["Attributes"]
        failed = [
            {"id": d.pk, "attempts": d.attempts, "error": d.last_error or "", "received_at": d.received_at}
            for d in self._store.list_by_status(Status.FAILED, limit=failed_limit)
        ]
        return InboxStatus(
            counts=counts,
            oldest_waiting_seconds=None if oldest is None else max(0, now - oldest),
            dead_letters=int(attrs.get("ApproximateNumberOfMessages", 0)),
            failed=failed,
        )

    def show(self, pk: str) -> dict[str, Any]:
        """One delivery's record; the body is summarised, never printed whole."""
        delivery = self._store.get(pk)
        record = {k: v for k, v in delivery.to_item().items() if k not in ("body",)}
        record["body"] = f"{delivery.body_bytes} bytes, sha256 {delivery.body_sha256[:16]}…"
        return record

    def retry(self, pk: str, now: int) -> Delivery:
        """Send a failed delivery round again (fresh attempts) or re-queue a waiting one."""
        delivery = self._store.get(pk)
        if delivery.status is Status.FAILED:
            delivery = self._store.requeue_failed(pk, now)
        elif delivery.status is not Status.RECEIVED:
            raise NotClaimable(f"{pk} is {delivery.status.value}; only failed or waiting deliveries retry")
        self._queue.send(pk)
        return delivery
