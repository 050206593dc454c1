"""sweep-inbox: re-queue stranded deliveries, set aside those past the attempt limit, report the backlog.

A delivery is stranded when it was stored but its pointer never reached the queue (status
``received`` and untouched for ``requeue_after_seconds``), or when its worker died holding the
lease (``processing`` past the lease expiry). The sweep races the worker, so each action is
conditional on the state the sweep read: a delivery the worker claimed in between is left alone.
"""

from __future__ import annotations

from typing import Any

from lockgate.config import InboxConfig
from lockgate.errors import QueueUnavailable
from lockgate.inbox.models import Delivery, Status
from lockgate.inbox.queue import DeadLetters, InboxQueue
from lockgate.inbox.store import InboxStore
from lockgate.inbox.worker import set_aside
from lockgate.jobs.contract import JobContext, JobResult

NAME = "sweep-inbox"
PAGE_SIZE = 50
PHASES = (Status.RECEIVED.value, Status.PROCESSING.value)


class InboxSweep:
    """The ``sweep-inbox`` job."""

    def __init__(
        self, *, inbox: InboxStore, queue: InboxQueue, dead_letters: DeadLetters, settings: InboxConfig
    ) -> None:
        self._inbox = inbox
        self._queue = queue
        self._dead_letters = dead_letters
        self._settings = settings

    def __call__(self, ctx: JobContext) -> JobResult:
        """Sweep both waiting statuses, page by page, from the saved cursor."""
        now = int(ctx.clock.now())
        counts = {"requeued": 0, "set_aside": 0, "left_alone": 0}
        if ctx.cursor is None:
            self._report_oldest(ctx, now)
        phase = str((ctx.cursor or {}).get("phase", PHASES[0]))
        start: dict[str, Any] | None = (ctx.cursor or {}).get("start")
        for status in PHASES[PHASES.index(phase) :]:
            while True:
                if ctx.should_stop():
                    return JobResult(done=False, cursor={"phase": status, "start": start}, counts=counts)
                # Received deliveries younger than the re-queue delay may still be on their way.
                before = now - self._settings.requeue_after_seconds if status == Status.RECEIVED else None
                page, start = self._inbox.page_by_status(
                    Status(status), received_before=before, start=start, limit=PAGE_SIZE
                )
                for listed in page:
                    counts[self._sweep_one(ctx, listed.pk, now)] += 1
                if start is None:
                    break
        for name, value in counts.items():
            if value and name != "left_alone":
                ctx.metrics.add_metric(name=f"Delivery_{name}", unit="Count", value=value)
        return JobResult(done=True, counts=counts)

    def _sweep_one(self, ctx: JobContext, pk: str, now: int) -> str:
        # The index is eventually consistent: decide on a consistent read of the item itself.
        delivery = self._inbox.get(pk)
        if not self._stranded(delivery, now):
            return "left_alone"
        if delivery.status is Status.PROCESSING and delivery.attempts >= self._settings.max_attempts:
            error = "attempt limit reached: the last attempt's lease expired (found by the sweep)"
            if set_aside(self._inbox, self._dead_letters, pk, delivery.lease_owner or "-", error, now):
                ctx.log.error("delivery set aside by the sweep", extra={"delivery": pk})
                return "set_aside"
            return "left_alone"  # claimed or finished since the read: the worker has it
        if not self._inbox.mark_requeued(delivery, now):
            return "left_alone"
        try:
            self._queue.send(pk)
        except QueueUnavailable as exc:  # the mark moved its clock; the next sweep tries again
            ctx.log.warning("sweep could not re-queue", extra={"delivery": pk, "error": str(exc)})
            return "left_alone"
        ctx.log.info("stranded delivery re-queued", extra={"delivery": pk, "status": delivery.status.value})
        return "requeued"

    def _stranded(self, delivery: Delivery, now: int) -> bool:
        if delivery.status is Status.PROCESSING:
            return (delivery.lease_expires_at or 0) < now
        if delivery.status is not Status.RECEIVED:
            return False
        # Untouched since it became available (or since the last sweep marked it) for the delay.
        last_touch = max(delivery.available_at, delivery.updated_at or delivery.received_at)
        return last_touch <= now - self._settings.requeue_after_seconds

    def _report_oldest(self, ctx: JobContext, now: int) -> None:
        oldest = self._inbox.list_by_status(Status.RECEIVED, limit=1, oldest_first=True)
        age = max(0, now - oldest[0].received_at) if oldest else 0
        ctx.metrics.add_metric(name="OldestWaitingDeliveryAge", unit="Seconds", value=age)
