"""Approval outcomes as inbox events, so they share the inbox's dedup, lease, retry and DLQ path."""

from __future__ import annotations

import json

from lockgate.inbox.events import enqueue, internal_event
from lockgate.inbox.models import Delivery
from lockgate.inbox.queue import InboxQueue
from lockgate.inbox.store import InboxStore
from lockgate.telemetry import Log

__all__ = ["SOURCE", "VetoTimer", "approval_event", "enqueue"]

SOURCE = "approval"


def approval_event(
    approval_id: str, kind: str, now: int, available_at: int | None = None, trace: str | None = None
) -> Delivery:
    """The inbox item for ``approval#<id>#<kind>`` (approved, rejected, veto); stable, so repeats dedupe.

    ``trace``: the deciding span's ``traceparent``, so the run that acts on it joins its trace.
    """
    body = json.dumps({"approval_id": approval_id, "state": kind}).encode()
    return internal_event(
        SOURCE, f"{approval_id}#{kind}", f"approval.{kind}", body, now, available_at, trace=trace
    )


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
