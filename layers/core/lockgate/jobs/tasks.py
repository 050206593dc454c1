"""Tasks on a schedule: each occurrence becomes the inbox event ``schedule#<name>#<scheduled time>``.

The id is stable, so a repeated Scheduler invocation (at-least-once delivery, a retry) stores
nothing new and queues nothing: the task runs once per occurrence. The worker routes the event
like a webhook: source ``schedule``, event type = the schedule's name.
"""

from __future__ import annotations

import json

from lockgate.inbox.events import enqueue, internal_event
from lockgate.inbox.queue import InboxQueue
from lockgate.inbox.store import InboxStore
from lockgate.jobs.contract import Factory, Job, JobContext, JobResources, JobResult

SOURCE = "schedule"


class ScheduledTask:
    """The job behind one ``[schedules.<name>]``: enqueue this occurrence for the worker."""

    def __init__(self, name: str, inbox: InboxStore, queue: InboxQueue) -> None:
        self._name = name
        self._inbox = inbox
        self._queue = queue

    def __call__(self, ctx: JobContext) -> JobResult:
        """Store and queue this occurrence once."""
        body = json.dumps({"schedule": self._name, "scheduled_time": ctx.scheduled_time}).encode()
        now = int(ctx.clock.now())
        event = internal_event(SOURCE, f"{self._name}#{ctx.scheduled_time}", self._name, body, now)
        stored = enqueue(self._inbox, self._queue, event, ctx.log)
        ctx.log.info(
            "scheduled task enqueued" if stored else "scheduled task already enqueued",
            extra={"delivery": event.pk},
        )
        return JobResult(done=True, counts={"enqueued": int(stored), "duplicate": int(not stored)})


def scheduled_task_factory(name: str) -> Factory:
    """Builds the ScheduledTask for ``name`` from the function's inbox table and queue."""

    def build(resources: JobResources) -> Job:
        return ScheduledTask(
            name,
            InboxStore(resources.client("dynamodb"), resources.name("INBOX_TABLE")),
            InboxQueue(resources.client("sqs"), resources.name("INBOX_QUEUE_URL")),
        )

    return build
