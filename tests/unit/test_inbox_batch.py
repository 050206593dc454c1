"""lockgate.inbox.batch: an SQS batch's records side by side, answered as Powertools' batch processor
answers; and the worker's shared telemetry under threads."""

from __future__ import annotations

import io
import json
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response

from lockgate.inbox.batch import QueueRecord, process_batch
from lockgate.inbox.worker import RetryLater
from lockgate.telemetry import SharedMetrics
from tests.support import RecordingLog


def sqs_event(*bodies: str) -> dict[str, Any]:
    return {
        "Records": [
            {"messageId": f"m-{n}", "receiptHandle": f"r-{n}", "body": body, "eventSource": "aws:sqs"}
            for n, body in enumerate(bodies)
        ]
    }


def outcome_by_body(body: str) -> str:
    """What a record's handler does, by its body: return, defer (RetryLater) or fail."""
    if body.startswith("defer"):
        raise RetryLater("deferred: capacity")
    if body.startswith("boom"):
        raise ValueError("message is not an inbox pointer")
    return f"done {body}"


BODIES = ("ok-1", "defer-1", "boom-1", "ok-2", "defer-2")


@pytest.mark.parametrize("concurrency", [1, 3, 10])
def test_given_mixed_records_then_the_failures_are_what_powertools_batch_processor_reports(
    concurrency: int,
) -> None:
    # Given a batch where some records defer (RetryLater), one fails and the rest succeed
    event = sqs_event(*BODIES)
    processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)
    todays = process_partial_response(
        event=event, record_handler=lambda record: outcome_by_body(record.body), processor=processor
    )
    # When the same batch runs through process_batch
    ours = process_batch(
        event, lambda r: outcome_by_body(r.body), concurrency=concurrency, log=RecordingLog()
    )
    # Then the answer is Powertools': the deferred and the failed records, by message id, in batch order
    assert ours == todays == {"batchItemFailures": [{"itemIdentifier": m} for m in ("m-1", "m-2", "m-4")]}


def test_given_records_finishing_in_reverse_then_failures_keep_the_batch_order() -> None:
    # Given three failing records where the first finishes last
    order: list[str] = []
    first_may_end = threading.Event()

    def handle(record: QueueRecord) -> None:
        if record.message_id == "m-0":
            first_may_end.wait(timeout=10)
        order.append(record.message_id)
        if record.message_id == "m-2":
            first_may_end.set()
        raise RetryLater("later")

    # When they run side by side
    answer = process_batch(sqs_event("a", "b", "c"), handle, concurrency=3, log=RecordingLog())
    # Then m-0 ended last, yet the answer lists the batch's order
    assert order[-1] == "m-0"
    assert [f["itemIdentifier"] for f in answer["batchItemFailures"]] == ["m-0", "m-1", "m-2"]


def test_given_concurrency_one_then_records_run_in_turn_in_the_calling_thread() -> None:
    seen: list[tuple[str, str]] = []
    process_batch(
        sqs_event("a", "b", "c"),
        lambda r: seen.append((r.body, threading.current_thread().name)),
        concurrency=1,
        log=RecordingLog(),
    )
    assert seen == [(b, threading.current_thread().name) for b in ("a", "b", "c")]


def test_given_an_empty_batch_then_nothing_fails() -> None:
    assert process_batch(
        {"Records": []}, lambda r: outcome_by_body(r.body), concurrency=10, log=RecordingLog()
    ) == {"batchItemFailures": []}


def test_given_a_record_that_fails_then_the_log_names_its_message_and_error_type_only() -> None:
    log = RecordingLog()
    process_batch(sqs_event("boom: secret body"), lambda r: outcome_by_body(r.body), concurrency=2, log=log)
    assert log.at("warning") == [{"msg": "record failed", "message_id": "m-0", "error": "ValueError"}]


def test_given_records_side_by_side_then_each_log_line_carries_its_own_delivery_key() -> None:
    # Given the worker handler's way of tagging log lines (Powertools' thread-safe keys), and a
    # batch whose records are all between tagging and logging at the same moment
    out = io.StringIO()
    logger = Logger(service="worker-test", logger_handler=_stream(out))
    logger.append_keys(request="req-1")  # the invocation's own keys, shared by every record
    everyone_tagged = threading.Barrier(4)

    def handle(record: QueueRecord) -> None:
        logger.thread_safe_append_keys(delivery=record.body)
        everyone_tagged.wait(timeout=10)
        logger.info(f"processing {record.body}")

    # When they run side by side
    process_batch(sqs_event("d-0", "d-1", "d-2", "d-3"), handle, concurrency=4, log=logger)
    logger.info("batch done")
    # Then each line carries its own record's key, and none survives the record
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert sorted((line["message"], line.get("delivery")) for line in lines[:4]) == [
        (f"processing d-{n}", f"d-{n}") for n in range(4)
    ]
    assert lines[-1]["message"] == "batch done" and "delivery" not in lines[-1]
    assert all(line["request"] == "req-1" for line in lines)


def _stream(out: io.StringIO) -> Any:
    import logging

    return logging.StreamHandler(out)


class RacySink:
    """A metric sink that reads, yields the CPU, then writes (as a dict read-modify-write can)."""

    def __init__(self) -> None:
        self.total = 0.0

    def add_metric(self, name: str, unit: Any, value: float) -> None:
        current = self.total
        time.sleep(0)
        self.total = current + value


def test_given_shared_metrics_then_adds_from_many_threads_are_never_lost() -> None:
    sink = RacySink()
    metrics = SharedMetrics(sink)

    def add_many() -> None:
        for _ in range(200):
            metrics.add_metric(name="DeliveryProcessed", unit="Count", value=1)

    run_threads(8, add_many)
    assert sink.total == 8 * 200


def run_threads(count: int, work: Callable[[], object]) -> None:
    threads = [threading.Thread(target=work) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def test_the_worker_reads_its_record_concurrency_from_the_environment() -> None:
    from lockgate.errors import ConfigError
    from lockgate.settings import WorkerSettings

    names = ("INBOX_TABLE", "STATE_TABLE", "INBOX_QUEUE_URL", "INBOX_DLQ_URL", "BODY_BUCKET")
    environ = dict.fromkeys(names, "x")
    assert WorkerSettings.from_env(environ).record_concurrency == 10
    assert WorkerSettings.from_env({**environ, "WORKER_RECORD_CONCURRENCY": "1"}).record_concurrency == 1
    with pytest.raises(ConfigError, match="WORKER_RECORD_CONCURRENCY must be a positive whole number"):
        WorkerSettings.from_env({**environ, "WORKER_RECORD_CONCURRENCY": "0"})
