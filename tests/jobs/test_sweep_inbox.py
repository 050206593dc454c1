"""sweep-inbox on moto: stranded deliveries come back exactly once; live leases are left alone."""

from __future__ import annotations

import json
from typing import Any

import pytest

from lockgate.errors import Deferred
from lockgate.inbox.models import Status
from lockgate.inbox.queue import DeadLetters, InboxQueue
from lockgate.inbox.routing import InboxEvent, TaskContext
from lockgate.jobs.builtin import sweep_inbox
from lockgate.jobs.builtin.sweep_inbox import InboxSweep
from lockgate.telemetry import CountingMetrics
from lockgate.webhooks.signing import sign
from tests.jobs.conftest import context
from tests.support import SECRETS, Harness, fail_calls


def receive(harness: Harness, delivery_id: str) -> str:
    """One signed GitHub delivery through the receiver; returns its inbox key."""
    body = json.dumps({"id": delivery_id}).encode()
    headers = sign(
        harness.config.sources["github"],
        SECRETS["GITHUB_SECRET"],
        body,
        int(harness.clock.now()),
        delivery_id=delivery_id,
        event_type="push",
    )
    assert harness.post("github", body, headers).status == 200
    return f"github#{delivery_id}"


def sweep(harness: Harness) -> InboxSweep:
    sqs = harness.aws.client("sqs")  # its own client: faults injected into the receiver's stay there
    return InboxSweep(
        inbox=harness.store(),
        queue=InboxQueue(sqs, harness.aws.queue_url),
        dead_letters=DeadLetters(sqs, harness.aws.dlq_url),
        settings=harness.config.inbox,
    )


def pointers(harness: Harness) -> list[str]:
    return [json.loads(m["Body"])["pk"] for m in harness.aws.drain(harness.aws.queue_url)]


@pytest.fixture
def handled(harness: Harness) -> list[str]:
    """Every delivery the task handler ran for (the real side effect of processing)."""
    calls: list[str] = []

    def handler(event: InboxEvent, ctx: TaskContext) -> str:
        calls.append(event.delivery.pk)
        return "handled"

    harness.router.add("github", "*", handler)
    return calls


def test_a_delivery_whose_queue_send_failed_is_recovered_and_processed_once(
    harness: Harness, handled: list[str]
) -> None:
    # Given the receiver stored a delivery but its queue send failed (the provider got 200)
    fail_calls(harness.client("sqs"), "SendMessage")
    pk = receive(harness, "lost-1")
    assert harness.store().get(pk).status is Status.RECEIVED and pointers(harness) == []
    # When the sweep runs before the re-queue delay: nothing yet (it may still be on its way)
    harness.clock.advance(60)
    assert sweep(harness)(context(harness.clock)).counts["requeued"] == 0
    # And again once the delay has passed, twice in a row (a repeated schedule)
    harness.clock.advance(61)
    metrics = CountingMetrics()
    first = sweep(harness)(context(harness.clock, metrics))
    second = sweep(harness)(context(harness.clock))
    # Then exactly one pointer was queued, and the age of the oldest waiting delivery was reported
    assert (first.done, first.counts["requeued"], second.counts["requeued"]) == (True, 1, 0)
    assert metrics.totals["OldestWaitingDeliveryAge"] == 121
    queued = pointers(harness)
    assert queued == [pk]
    # When the worker takes it
    worker = harness.worker()
    for message_pk in queued:
        worker.process(message_pk, "rh", lambda: 300.0)
    # Then the task ran once and the row is done after one attempt; a later sweep changes nothing
    row = harness.store().get(pk)
    assert handled == [pk] and (row.status, row.attempts, row.lease_owner) == (Status.DONE, 1, None)
    harness.clock.advance(600)
    assert sweep(harness)(context(harness.clock)).counts["requeued"] == 0 and pointers(harness) == []


def test_a_delivery_deferred_for_an_hour_is_parked_in_the_table_and_the_sweep_brings_it_back(
    harness: Harness,
) -> None:
    # Given a handler that must wait an hour (a Message Batch still running), then succeeds
    waits: list[int] = []

    def batch_task(event: InboxEvent, ctx: TaskContext) -> str:
        if not waits:
            waits.append(3600)
            raise Deferred("waiting for message batch msgbatch_1", 3600)
        return "batch answer used"

    harness.router.add("github", "*", batch_task)
    pk = receive(harness, "batch-1")
    (queued,) = pointers(harness)
    # When the worker takes the pointer
    outcome = harness.worker().process(queued, "rh", lambda: 300.0)
    # Then the pointer is let go (the call returns: SQS deletes it) and the table keeps the delivery
    assert outcome.startswith("parked for 3600 s: waiting for message batch")
    row = harness.store().get(pk)
    assert (row.status, row.attempts, row.deferrals) == (Status.RECEIVED, 0, 1)
    # And nothing is re-queued before it is available again plus the re-queue delay
    harness.clock.advance(3600)
    assert sweep(harness)(context(harness.clock)).counts["requeued"] == 0
    harness.clock.advance(harness.config.inbox.requeue_after_seconds)
    assert sweep(harness)(context(harness.clock)).counts["requeued"] == 1
    # And the re-queued pointer finishes it, once, on its first attempt
    (again,) = pointers(harness)
    assert harness.worker().process(again, "rh-2", lambda: 300.0) == "batch answer used"
    row = harness.store().get(pk)
    assert (row.status, row.attempts, row.deferrals) == (Status.DONE, 1, 1)


def test_a_delivery_under_a_live_lease_is_left_alone(harness: Harness, handled: list[str]) -> None:
    # Given a delivery a worker is processing under a five-minute lease
    pk = receive(harness, "busy-1")
    pointers(harness)  # the receiver's own pointer was taken by that worker
    harness.store().claim(pk, "worker-a", int(harness.clock.now()), lease_seconds=300)
    # When the sweep runs after the re-queue delay but inside the lease
    harness.clock.advance(200)
    result = sweep(harness)(context(harness.clock))
    # Then nothing is queued and the lease is untouched
    row = harness.store().get(pk)
    assert result.counts["requeued"] == 0 and pointers(harness) == []
    assert (row.status, row.lease_owner, row.attempts) == (Status.PROCESSING, "worker-a", 1)


def test_an_expired_lease_below_the_limit_is_requeued_and_finished_by_the_next_worker(
    harness: Harness, handled: list[str]
) -> None:
    # Given a worker claimed a delivery and died (its pointer is gone)
    pk = receive(harness, "crash-1")
    pointers(harness)
    harness.store().claim(pk, "worker-a", int(harness.clock.now()), lease_seconds=60)
    # When the lease has expired and the sweep runs
    harness.clock.advance(61)
    result = sweep(harness)(context(harness.clock))
    # Then its pointer is back and the next worker finishes it on the second attempt
    assert result.counts["requeued"] == 1
    for queued in pointers(harness):
        harness.worker().process(queued, "rh", lambda: 300.0)
    row = harness.store().get(pk)
    assert handled == [pk] and (row.status, row.attempts) == (Status.DONE, 2)


def test_an_expired_lease_past_the_attempt_limit_is_set_aside(harness: Harness, handled: list[str]) -> None:
    # Given a delivery whose every attempt died holding the lease, the last one the fifth
    pk = receive(harness, "doomed-1")
    pointers(harness)
    for n in range(harness.config.inbox.max_attempts):
        harness.store().claim(pk, f"worker-{n}", int(harness.clock.now()), lease_seconds=60)
        harness.clock.advance(61)
    # When the sweep runs
    metrics = CountingMetrics()
    result = sweep(harness)(context(harness.clock, metrics))
    # Then it is failed with the reason, listed in the DLQ, not re-queued, and never handled
    row = harness.store().get(pk)
    assert result.counts == {"requeued": 0, "set_aside": 1, "left_alone": 0}
    assert row.status is Status.FAILED and "attempt limit" in (row.last_error or "")
    dead = [json.loads(m["Body"]) for m in harness.aws.drain(harness.aws.dlq_url)]
    assert [d["pk"] for d in dead] == [pk] and pointers(harness) == [] and handled == []
    assert metrics.totals["Delivery_set_aside"] == 1


def test_a_sweep_stopped_by_its_deadline_resumes_from_its_cursor(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given three stranded deliveries and pages of one
    monkeypatch.setattr(sweep_inbox, "PAGE_SIZE", 1)
    fail_calls(harness.client("sqs"), "SendMessage")
    keys = [receive(harness, f"lost-{n}") for n in range(3)]
    harness.clock.advance(121)
    # When the first run has time for two pages only
    first = sweep(harness)(context(harness.clock, pages=2))
    # Then it stops with a cursor after re-queueing two
    assert (first.done, first.counts["requeued"]) == (False, 2) and first.cursor is not None
    # When the next run resumes from that cursor
    cursor: dict[str, Any] = json.loads(json.dumps(first.cursor))  # the runner stores it as JSON
    second = sweep(harness)(context(harness.clock, cursor=cursor))
    # Then it re-queues only the third: each delivery was queued exactly once
    assert (second.done, second.counts["requeued"]) == (True, 1)
    assert sorted(pointers(harness)) == sorted(keys)


def test_the_sweeps_writes_are_refused_once_the_worker_moved_the_delivery_on(harness: Harness) -> None:
    from lockgate.inbox.worker import set_aside

    # Given the sweep read a stranded delivery, and one whose lease had expired on its last attempt
    pk = receive(harness, "raced-1")
    seen = harness.store().get(pk)
    harness.clock.advance(121)
    # When a worker claims it before the sweep writes
    harness.store().claim(pk, "worker-b", int(harness.clock.now()), lease_seconds=300)
    now = int(harness.clock.now())
    # Then the sweep's re-queue mark, conditional on what it saw, is refused
    assert harness.store().mark_requeued(seen, now) is False
    # And setting aside under the old owner is refused too: the new lease stands (the worker's own
    # set-aside path dead-letters first, so this rare race leaves a DLQ pointer the row contradicts)
    sqs = harness.aws.client("sqs")
    dead = DeadLetters(sqs, harness.aws.dlq_url)
    assert set_aside(harness.store(), dead, pk, "worker-a", "attempt limit", now) is False
    row = harness.store().get(pk)
    assert (row.status, row.lease_owner) == (Status.PROCESSING, "worker-b")
