"""One SQS batch of inbox pointers: its records processed side by side, failures reported per record.

The worker spends almost all of a record's time waiting for the model, and Lambda bills that
wait; one after another, a batch of ten pays ten waits. Here the records of one batch run in a
bounded thread pool, so the batch is billed for about its longest record. Nothing else changes:
each record still goes through ``Worker.process`` (lease, ledger, deferral, retry), and the answer
is SQS's partial batch response, exactly as Powertools' ``BatchProcessor`` with
``process_partial_response`` gives it: a record whose handler returns is deleted, one whose handler
raises (``RetryLater`` after a deferral or a retry, or any other fault) is listed by its message id
and comes back; one record's fault never fails the batch.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from lockgate.inbox.worker import RetryLater
from lockgate.telemetry import Log


@dataclass(frozen=True)
class QueueRecord:
    """The parts of one SQS record the worker uses."""

    message_id: str
    receipt_handle: str
    body: str

    @classmethod
    def from_event(cls, record: Mapping[str, Any]) -> QueueRecord:
        """From a record of Lambda's SQS event."""
        return cls(
            str(record["messageId"]), str(record.get("receiptHandle", "")), str(record.get("body", ""))
        )


RecordHandler = Callable[[QueueRecord], object]


def process_batch(
    event: Mapping[str, Any], handle: RecordHandler, *, concurrency: int, log: Log
) -> dict[str, list[dict[str, str]]]:
    """Run ``handle`` on each record, at most ``concurrency`` at once; the ones that raised are the failures.

    ``concurrency`` 1 runs them one after another in the calling thread, as before. Failures are
    listed in the batch's order whatever order the records finished in.
    """
    records = [QueueRecord.from_event(record) for record in event.get("Records") or ()]
    workers = max(1, min(concurrency, len(records)))
    # Each record runs in its own copy of the caller's context: per-record context variables (the
    # logger's thread-safe keys) start from the invocation's and vanish with the record.
    if workers == 1:
        done = [contextvars.copy_context().run(_succeeded, handle, record, log) for record in records]
    else:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="record") as pool:
            futures = [
                pool.submit(contextvars.copy_context().run, _succeeded, handle, record, log)
                for record in records
            ]
            done = [future.result() for future in futures]
    return {"batchItemFailures": _failures(records, done)}


def _succeeded(handle: RecordHandler, record: QueueRecord, log: Log) -> bool:
    try:
        handle(record)
    except RetryLater:
        return False  # the worker released or deferred the delivery, and said so
    except Exception as exc:  # noqa: BLE001 - one record's fault fails that record, never the batch
        log.warning("record failed", extra={"message_id": record.message_id, "error": type(exc).__name__})
        return False
    return True


def _failures(records: Sequence[QueueRecord], done: Sequence[bool]) -> list[dict[str, str]]:
    return [{"itemIdentifier": record.message_id} for record, ok in zip(records, done, strict=True) if not ok]
