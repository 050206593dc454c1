"""Operating the inbox: status, one delivery, operator retries, redrive of every failure, replays."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lockgate.errors import NotClaimable, QueueUnavailable
from lockgate.inbox.events import replay_event
from lockgate.inbox.models import Delivery, Status
from lockgate.inbox.queue import InboxQueue
from lockgate.inbox.store import InboxStore
from lockgate_infra.dead_letters import DeadLetterQueue

MAX_REPLAYS = 100  # replays of one delivery: past this, something is wrong with the operator's script


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
        self._dlq = DeadLetterQueue(sqs, dlq_url)

    def status(self, now: int, failed_limit: int = 20) -> InboxStatus:
        """A summary an operator can act on."""
        counts = {status.value: n for status, n in self._store.count_by_status().items()}
        # One item from the index, oldest first: no need to read every waiting delivery.
        waiting = self._store.list_by_status(Status.RECEIVED, limit=1, oldest_first=True)
        oldest = waiting[0].received_at if waiting else None
        failed = [
            {"id": d.pk, "attempts": d.attempts, "error": d.last_error or "", "received_at": d.received_at}
            for d in self._store.list_by_status(Status.FAILED, limit=failed_limit)
        ]
        return InboxStatus(
            counts=counts,
            oldest_waiting_seconds=None if oldest is None else max(0, now - oldest),
            dead_letters=self._dlq.depth(),
            failed=failed,
        )

    def show(self, pk: str) -> dict[str, Any]:
        """One delivery's record; the body is summarised, never printed whole."""
        delivery = self._store.get(pk)
        record = {k: v for k, v in delivery.to_item().items() if k not in ("body",)}
        record["body"] = f"{delivery.body_bytes} bytes, sha256 {delivery.body_sha256[:16]}…"
        return record

    def retry(self, pk: str, now: int) -> Delivery:
        """Send a failed delivery round again (fresh attempts) or re-queue a waiting one.

        Its dead letters are removed, so the DLQ (and its alarm) only holds what still needs a person.
        """
        delivery = self._store.get(pk)
        if delivery.status is Status.FAILED:
            delivery = self._store.requeue_failed(pk, now)
        elif delivery.status is not Status.RECEIVED:
            raise NotClaimable(f"{pk} is {delivery.status.value}; only failed or waiting deliveries retry")
        self._queue.send(pk)
        self._dlq.remove({pk})
        return delivery

    def failed(self) -> list[str]:
        """Every failed delivery's key, oldest first (paged through the status index)."""
        keys: list[str] = []
        start: dict[str, Any] | None = None
        while True:
            page, start = self._store.page_by_status(Status.FAILED, start=start, limit=100)
            keys.extend(d.pk for d in page)
            if start is None:
                return keys

    def redrive(self, now: int, *, dry_run: bool = False) -> list[str]:
        """Send every failed delivery round again and clear their dead letters; the keys redriven."""
        keys = self.failed()
        if dry_run:
            return keys
        redriven = []
        for pk in keys:
            try:
                self._store.requeue_failed(pk, now)
            except NotClaimable:  # someone retried it since it was listed: not ours to send
                continue
            self._queue.send(pk)
            redriven.append(pk)
        self._dlq.remove(set(redriven))
        return redriven

    def replay(self, pk: str, now: int, by: str) -> tuple[Delivery, bool]:
        """Run a done delivery again on purpose: a new inbox item ``{pk}#replay{n}``; (it, queued now?)."""
        original = self._store.get(pk)
        if original.status is not Status.DONE:
            raise NotClaimable(
                f"{pk} is {original.status.value}; only done deliveries replay "
                "(use `lockgate inbox retry` for a failed one)"
            )
        for n in range(1, MAX_REPLAYS + 1):
            replay = replay_event(original, n, now, by)
            if not self._store.put_new(replay).created:
                continue
            try:
                self._queue.send(replay.pk)
            except QueueUnavailable:  # stored and waiting: the inbox sweep queues it
                return replay, False
            return replay, True
        raise NotClaimable(f"{pk} was already replayed {MAX_REPLAYS} times")
