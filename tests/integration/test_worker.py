"""The worker on moto: leases, late finishes, backoff, the attempt limit and the DLQ."""

from __future__ import annotations

import json
import threading
from collections import Counter
from typing import Any

import pytest

from lockgate.errors import BadDelivery, Deferred, StaleEvent
from lockgate.inbox.models import Delivery, Status
from lockgate.inbox.routing import InboxEvent, TaskContext
from lockgate.inbox.worker import RetryLater
from lockgate.webhooks.signing import sign
from tests.support import SECRETS, Harness, race


def store(harness: Harness, n: int, source: str = "github") -> list[str]:
    """Receive n distinct signed deliveries; return their keys."""
    cfg = harness.config.sources[source]
    receiver = harness.receiver()
    keys = []
    for i in range(n):
        body = json.dumps({"n": i}).encode()
        headers = sign(
            cfg,
            SECRETS["GITHUB_SECRET"],
            body,
            int(harness.clock.now()),
            delivery_id=f"d-{i}",
            event_type="push",
        )
        harness.post(source, body, headers, receiver=receiver)
        keys.append(f"{source}#d-{i}")
    return keys


def item(harness: Harness, pk: str) -> Delivery:
    return harness.store().get(pk)


def never_called() -> float:
    return 300.0


def test_default_handler_records_no_task(harness: Harness) -> None:
    # Given a stored delivery nobody has a task for
    (pk,) = store(harness, 1)
    # When the worker processes its pointer
    outcome = harness.worker().process(pk, "rh", never_called)
    # Then it is done, with the outcome saying so, and the lease is released
    row = item(harness, pk)
    assert row.status is Status.DONE
    assert row.outcome == outcome == "no task for github event 'push'"
    assert row.lease_owner is None and row.attempts == 1


def test_four_workers_share_sixty_deliveries_each_handled_once(harness: Harness) -> None:
    # Given 60 stored deliveries whose pointers were each queued twice (SQS is at-least-once)
    keys = store(harness, 60)
    sqs = harness.aws.client("sqs")
    for pk in keys:
        sqs.send_message(QueueUrl=harness.aws.queue_url, MessageBody=json.dumps({"pk": pk}))
    handled: Counter[str] = Counter()
    lock = threading.Lock()

    def count(event: InboxEvent, context: TaskContext) -> str:
        with lock:
            handled[event.delivery.pk] += 1
        return "counted"

    harness.router.add("github", "push", count)

    def run_worker() -> None:
        worker = harness.worker()
        client = harness.aws.client("sqs")
        while True:
            got = client.receive_message(
                QueueUrl=harness.aws.queue_url, MaxNumberOfMessages=10, VisibilityTimeout=30
            ).get("Messages", [])
            if not got:
                return
            for m in got:
                try:
                    worker.process(json.loads(m["Body"])["pk"], m["ReceiptHandle"], never_called)
                except RetryLater:
                    continue
                client.delete_message(QueueUrl=harness.aws.queue_url, ReceiptHandle=m["ReceiptHandle"])

    # When four workers drain the queue concurrently
    race([run_worker] * 4)
    # Then every delivery was handled exactly once and every row is done
    assert handled == Counter({pk: 1 for pk in keys})
    assert all(item(harness, pk).status is Status.DONE for pk in keys)


def test_killed_worker_is_taken_over_after_its_lease(harness: Harness) -> None:
    # Given worker A claimed a delivery and then died without finishing
    (pk,) = store(harness, 1)
    harness.store().claim(pk, "worker-a", int(harness.clock.now()), lease_seconds=60)
    worker_b = harness.worker()
    # When worker B gets the redelivered pointer while A's lease is still live
    with pytest.raises(RetryLater):
        worker_b.process(pk, "rh", never_called)
    assert item(harness, pk).lease_owner == "worker-a"
    # And again after the lease expired
    harness.clock.advance(61)
    worker_b.process(pk, "rh", never_called)
    # Then B processed it: done, second attempt, no lease left
    row = item(harness, pk)
    assert (row.status, row.attempts, row.lease_owner) == (Status.DONE, 2, None)


def test_slow_workers_late_finish_is_refused(harness: Harness) -> None:
    # Given a handler so slow that its lease expires and another worker takes over mid-job
    (pk,) = store(harness, 1)
    calls: list[str] = []

    def slow_then_fast(event: InboxEvent, context: TaskContext) -> str:
        calls.append("call")
        if len(calls) == 1:
            harness.clock.advance(120)  # the lease (60 s) runs out while we work
            harness.worker().process(pk, "rh-2", never_called)  # worker B takes over and finishes
            return "slow result"
        return "fast result"

    harness.router.add("github", "push", slow_then_fast)
    # When the slow worker finally tries to finish
    outcome = harness.worker().process(pk, "rh-1", never_called)
    # Then its result is refused and the new owner's result stands
    assert outcome == "lease lost"
    row = item(harness, pk)
    assert row.outcome == "fast result" and row.status is Status.DONE
    assert harness.metrics.totals["LateFinishRefused"] == 1


def test_failing_job_backs_off_then_is_set_aside(harness: Harness) -> None:
    # Given a handler that always fails
    (pk,) = store(harness, 1)

    def broken(event: InboxEvent, context: TaskContext) -> str:
        raise RuntimeError("downstream is down")

    harness.router.add("github", "push", broken)
    worker = harness.worker()
    sqs = harness.aws.client("sqs")
    delays = []
    # When it is retried until the attempt limit (5), honouring each backoff
    for attempt in range(1, 5):
        msg = sqs.receive_message(QueueUrl=harness.aws.queue_url, VisibilityTimeout=30)["Messages"][0]
        with pytest.raises(RetryLater):
            worker.process(pk, msg["ReceiptHandle"], never_called)
        row = item(harness, pk)
        assert row.status is Status.RECEIVED and row.attempts == attempt
        assert row.last_error == "RuntimeError: downstream is down"
        delay = row.available_at - int(harness.clock.now())
        assert 1 <= delay <= 2 * 2**attempt
        delays.append(delay)
        # Too early: the delivery is still backing off and stays untouched
        with pytest.raises(RetryLater):
            worker.process(pk, msg["ReceiptHandle"], never_called)
        assert item(harness, pk).attempts == attempt
        harness.clock.advance(delay)
        # make the deferred message visible again for the next round
        sqs.change_message_visibility(
            QueueUrl=harness.aws.queue_url, ReceiptHandle=msg["ReceiptHandle"], VisibilityTimeout=0
        )
    outcome = worker.process(pk, "rh-final", never_called)
    # Then after the fifth failure it is failed, listed, and set aside in the DLQ with its error
    row = item(harness, pk)
    assert row.status is Status.FAILED and row.attempts == 5
    assert outcome.startswith("failed: RuntimeError")
    (dead,) = harness.aws.drain(harness.aws.dlq_url)
    assert json.loads(dead["Body"]) == {"pk": pk, "error": "RuntimeError: downstream is down"}
    assert [d.pk for d in harness.store().list_by_status(Status.FAILED)] == [pk]


def deferring(times: int, delay: int) -> Any:
    """A handler that says "not now" (as capacity, a spent cap or a running batch do) ``times`` times."""
    said = []

    def handler(event: InboxEvent, context: TaskContext) -> str:
        if len(said) < times:
            said.append(delay)
            raise Deferred("model#claude-sonnet-5-5 bucket is empty", delay)
        return "done after waiting"

    return handler


def test_a_deferral_is_not_an_attempt_so_waiting_never_uses_up_the_limit(harness: Harness) -> None:
    # Given a handler that defers a minute at a time, more times than the attempt limit (5)
    (pk,) = store(harness, 1)
    harness.router.add("github", "push", deferring(times=8, delay=60))
    worker = harness.worker()
    sqs = harness.aws.client("sqs")
    # When the worker takes the pointer each time it comes back
    for waited in range(1, 9):
        msg = sqs.receive_message(QueueUrl=harness.aws.queue_url, VisibilityTimeout=30)["Messages"][0]
        with pytest.raises(RetryLater):
            worker.process(pk, msg["ReceiptHandle"], never_called)
        row = item(harness, pk)
        # Then each deferral gives the attempt back and is counted on its own
        assert (row.status, row.attempts, row.deferrals) == (Status.RECEIVED, 0, waited)
        assert row.available_at == int(harness.clock.now()) + 60
        assert row.last_error == "deferred: model#claude-sonnet-5-5 bucket is empty"
        harness.clock.advance(60)
        sqs.change_message_visibility(
            QueueUrl=harness.aws.queue_url, ReceiptHandle=msg["ReceiptHandle"], VisibilityTimeout=0
        )
    outcome = worker.process(pk, "rh-last", never_called)
    # And after eight waits it is processed, on its first attempt
    row = item(harness, pk)
    assert outcome == "done after waiting" and (row.status, row.attempts) == (Status.DONE, 1)
    assert harness.metrics.totals["DeliveryDeferred"] == 8 and harness.aws.drain(harness.aws.dlq_url) == []


def test_a_delivery_still_deferred_past_the_defer_limit_is_set_aside_with_the_reason(
    harness: Harness,
) -> None:
    # Given a delivery that arrived 47 hours ago and a handler that wants two more hours
    (pk,) = store(harness, 1)
    harness.clock.advance(47 * 3600)
    harness.router.add("github", "push", deferring(times=1, delay=2 * 3600))
    # When it is processed
    outcome = harness.worker().process(pk, "rh", never_called)
    # Then waiting past the 48-hour limit is refused: it is failed and in the DLQ, saying why
    assert outcome.startswith("failed: still deferred 48 h after it arrived: model#claude-sonnet-5-5")
    assert item(harness, pk).status is Status.FAILED
    (dead,) = harness.aws.drain(harness.aws.dlq_url)
    assert json.loads(dead["Body"])["pk"] == pk


def test_crashed_attempts_count_toward_the_limit(harness: Harness) -> None:
    # Given a delivery whose five attempts all died mid-job (lease expired each time)
    (pk,) = store(harness, 1)
    for _ in range(5):
        harness.store().claim(pk, "crashy", int(harness.clock.now()), lease_seconds=10)
        harness.clock.advance(11)
    # When a worker picks it up again
    outcome = harness.worker().process(pk, "rh", never_called)
    # Then it gives up instead of running a sixth time
    assert outcome.startswith("failed: attempt limit reached")
    assert item(harness, pk).status is Status.FAILED
    assert len(harness.aws.drain(harness.aws.dlq_url)) == 1


def test_bad_delivery_is_set_aside_at_once_and_good_ones_proceed(harness: Harness) -> None:
    # Given three deliveries, the middle one malformed for its handler
    keys = store(harness, 3)

    def picky(event: InboxEvent, context: TaskContext) -> str:
        if event.json()["n"] == 1:
            raise BadDelivery("missing order id")
        return "ok"

    harness.router.add("github", "push", picky)
    worker = harness.worker()
    outcomes = [worker.process(pk, "rh", never_called) for pk in keys]
    # Then the broken one failed without retries; the others are done
    assert [item(harness, pk).status for pk in keys] == [Status.DONE, Status.FAILED, Status.DONE]
    assert outcomes[1] == "failed: bad delivery: missing order id"
    assert item(harness, keys[1]).attempts == 1


def test_finished_delivery_pointer_is_dropped(harness: Harness) -> None:
    (pk,) = store(harness, 1)
    worker = harness.worker()
    worker.process(pk, "rh", never_called)
    assert worker.process(pk, "rh", never_called) == "skipped"
    assert worker.process("github#never-stored", "rh", never_called) == "skipped"
    assert item(harness, pk).attempts == 1


def test_stale_event_is_refused_by_the_freshness_helper(harness: Harness) -> None:
    # Given two updates to one entity, the newer one applied first
    def apply(event: InboxEvent, context: TaskContext) -> str:
        data: dict[str, Any] = event.json()
        context.versions.apply_if_newer("order#A-1", data["n"], event.delivery.delivery_id)
        return f"applied {data['n']}"

    harness.router.add("github", "push", apply)
    keys = store(harness, 3)  # bodies carry n = 0, 1, 2
    worker = harness.worker()
    assert worker.process(keys[2], "rh", never_called) == "applied 2"
    # When the older ones arrive late
    stale = worker.process(keys[0], "rh", never_called)
    # Then they are recorded as stale, not applied, and not retried
    assert stale.startswith("stale, not applied")
    assert item(harness, keys[0]).status is Status.DONE
    # A retry of the applied one itself is allowed (same delivery)
    harness.aws.client("dynamodb")
    harness.router = harness.router
    versions = harness.worker()._versions
    versions.apply_if_newer("order#A-1", 2, "d-2")
    with pytest.raises(StaleEvent):
        versions.apply_if_newer("order#A-1", 2, "d-other")


def test_large_body_is_read_back_from_s3(harness: Harness) -> None:
    seen: list[int] = []

    def size(event: InboxEvent, context: TaskContext) -> str:
        seen.append(len(event.body))
        return "ok"

    harness.router.add("partner", "order.updated", size)
    body = json.dumps({"type": "order.updated", "blob": "q" * 100_000}).encode()
    headers = sign(
        harness.config.sources["partner"],
        SECRETS["PARTNER_SECRET"],
        body,
        int(harness.clock.now()),
        delivery_id="big",
        event_type="order.updated",
    )
    assert harness.post("partner", body, headers).status == 200
    harness.worker().process("partner#big", "rh", never_called)
    assert seen == [len(body)]


def test_inbox_status_reports_the_oldest_waiting_delivery(harness: Harness) -> None:
    from lockgate.inbox.queue import InboxQueue
    from lockgate_infra.inbox_ops import InboxOps

    # Given three deliveries stored a minute apart, the first one already processed
    (first,) = store(harness, 1)
    for i in (1, 2):
        harness.clock.advance(60)
        body = json.dumps({"n": i}).encode()
        headers = sign(
            harness.config.sources["github"],
            SECRETS["GITHUB_SECRET"],
            body,
            int(harness.clock.now()),
            delivery_id=f"late-{i}",
            event_type="push",
        )
        assert harness.post("github", body, headers).status == 200
    harness.worker().process(first, "rh", never_called)
    harness.clock.advance(60)
    sqs = harness.aws.client("sqs")
    ops = InboxOps(harness.store(), InboxQueue(sqs, harness.aws.queue_url), sqs, harness.aws.dlq_url)
    # When the operator asks for the status
    status = ops.status(int(harness.clock.now()))
    # Then the oldest still waiting is the second delivery, stored two minutes ago
    assert status.counts["received"] == 2 and status.counts["done"] == 1
    assert status.oldest_waiting_seconds == 120
