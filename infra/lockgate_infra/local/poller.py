"""An SQS event source mapping: long-poll a queue, invoke a function, delete what succeeded."""

from __future__ import annotations

import base64
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from lockgate_infra.local.background import Background
from lockgate_infra.local.health import Health

log = logging.getLogger("lockgate_infra.local")

MAX_RECEIVE = 10  # SQS returns at most 10 messages per ReceiveMessage


class BatchResponseError(ValueError):
    """The handler's batchItemFailures response is malformed, so Lambda fails the whole batch."""


def sqs_record(message: dict[str, Any], queue_arn: str, region: str) -> dict[str, Any]:
    """A Lambda SQS event record for a received message."""
    record: dict[str, Any] = {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": {k: str(v) for k, v in (message.get("Attributes") or {}).items()},
        "messageAttributes": {
            name: _message_attribute(value)
            for name, value in (message.get("MessageAttributes") or {}).items()
        },
        "md5OfBody": message.get("MD5OfBody", ""),
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": region,
    }
    if "MD5OfMessageAttributes" in message:
        record["md5OfMessageAttributes"] = message["MD5OfMessageAttributes"]
    return record


def _message_attribute(value: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "dataType": value["DataType"],
        "stringListValues": list(value.get("StringListValues") or []),
        "binaryListValues": [base64.b64encode(b).decode() for b in value.get("BinaryListValues") or []],
    }
    if "StringValue" in value:
        out["stringValue"] = value["StringValue"]
    if "BinaryValue" in value:
        out["binaryValue"] = base64.b64encode(value["BinaryValue"]).decode()
    return out


def failed_message_ids(response: Any, message_ids: set[str]) -> set[str]:
    """The ids a ReportBatchItemFailures response asks to retry, by Lambda's rules.

    No response, an empty one or an empty list: all succeeded. A null or empty
    ``itemIdentifier``, or one that is not in the batch: BatchResponseError (the whole batch fails).
    """
    if response is None or response == {}:
        return set()
    if not isinstance(response, dict):
        raise BatchResponseError(f"expected an object with batchItemFailures, got {type(response).__name__}")
    failures = response.get("batchItemFailures")
    if failures is None:
        return set()
    if not isinstance(failures, list):
        raise BatchResponseError("batchItemFailures must be a list")
    failed: set[str] = set()
    for failure in failures:
        identifier = failure.get("itemIdentifier") if isinstance(failure, dict) else None
        if not isinstance(identifier, str) or identifier not in message_ids:
            raise BatchResponseError(f"itemIdentifier {identifier!r} is not a message of this batch")
        failed.add(identifier)
    return failed


class SqsPoller(Background):
    """One thread that feeds a queue's messages to a function in batches."""

    def __init__(
        self,
        sqs: Any,
        queue_url: str,
        queue_arn: str,
        invoke: Callable[[dict[str, Any]], Any],
        *,
        batch_size: int = 10,
        report_batch_item_failures: bool = True,
        wait_seconds: int = 1,
        batching_window: float = 0.0,
        region: str = "us-east-1",
        name: str = "",
        function: str = "",
    ) -> None:
        self._sqs = sqs
        self.queue_url = queue_url
        self.queue_arn = queue_arn
        self._invoke = invoke
        self._batch_size = max(1, min(batch_size, MAX_RECEIVE))
        self._report_failures = report_batch_item_failures
        self._wait_seconds = wait_seconds
        self.batching_window = batching_window  # MaximumBatchingWindowInSeconds: wait to fill a batch
        self._region = region
        self.name = name or queue_arn.rsplit(":", 1)[-1]
        self.function = function  # its logical id, for the status (its Timeout)
        self.health = Health()
        self._stop = threading.Event()
        self._progress = threading.Condition()
        self._cycles = 0  # receive calls completed, their batch handled
        self._busy = False
        self.processed = 0  # messages handed to the function
        self.deleted = 0
        self.invocations = 0
        self.failed_invocations = 0

    def start(self) -> None:
        """Start polling in a daemon thread."""
        self._start_thread(f"sqs-poller {self.name}")

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                messages = self._receive(self._batch_size, self._wait_seconds)
                if messages and self.batching_window > 0:
                    messages += self._fill(len(messages))
            except (BotoCoreError, ClientError) as exc:
                if not self._stop.is_set():
                    self.health.read(exc)
                    log.warning("%s: receive failed (%s); retrying", self.name, exc)
                    self._stop.wait(1.0)
                continue
            self.health.read()
            if messages and self._stop.is_set():
                break  # stopping: start no new work; they come back after the visibility timeout
            if messages:
                self._handle(messages)
            with self._progress:
                self._cycles += 1
                self._progress.notify_all()
            if not messages:
                self._stop.wait(0.05)  # the long poll already waited; this only bounds a tight loop

    def _receive(self, most: int, wait_seconds: int) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = self._sqs.receive_message(
            QueueUrl=self.queue_url,
            MaxNumberOfMessages=most,
            WaitTimeSeconds=wait_seconds,
            MessageSystemAttributeNames=["All"],
            MessageAttributeNames=["All"],
        ).get("Messages", [])
        return messages

    def _fill(self, have: int) -> list[dict[str, Any]]:
        """More messages until the batch is full or the batching window has passed, as Lambda waits."""
        more: list[dict[str, Any]] = []
        deadline = time.monotonic() + self.batching_window
        while have + len(more) < self._batch_size and not self._stop.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                break
            got = self._receive(self._batch_size - have - len(more), 0)
            more += got
            if not got:
                self._stop.wait(min(left, 0.05))
        return more

    def _handle(self, messages: list[dict[str, Any]]) -> None:
        with self._progress:
            self._busy = True
        try:
            self.invocations += 1
            self.processed += len(messages)
            self.health.invoking(len(messages), self.function)
            event = {"Records": [sqs_record(m, self.queue_arn, self._region) for m in messages]}
            try:
                response = self._invoke(event)
                failed = failed_message_ids(response, {m["MessageId"] for m in messages})
            except Exception as exc:  # noqa: BLE001 - as in Lambda: nothing is deleted, all come back later
                self.failed_invocations += 1
                self.health.invoked(exc)
                log.exception("%s: batch of %d failed; the messages return after the visibility timeout",
                              self.name, len(messages))  # fmt: skip
                return
            self.health.invoked()
            if not self._report_failures:
                failed = set()  # without ReportBatchItemFailures Lambda ignores the response
            elif failed:
                log.info("%s: %d of %d messages reported as failed", self.name, len(failed), len(messages))
            self._delete([m for m in messages if m["MessageId"] not in failed])
        finally:
            with self._progress:
                self._busy = False
                self._progress.notify_all()

    def _delete(self, messages: list[dict[str, Any]]) -> None:
        for start in range(0, len(messages), MAX_RECEIVE):
            chunk = messages[start : start + MAX_RECEIVE]
            response = self._sqs.delete_message_batch(
                QueueUrl=self.queue_url,
                Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(chunk)],
            )
            self.deleted += len(response.get("Successful", []))
            for failure in response.get("Failed", []):
                log.warning("%s: could not delete a message: %s", self.name, failure.get("Message"))

    def visible(self) -> int:
        """How many messages wait, visible, in its queue now."""
        attributes = self._sqs.get_queue_attributes(
            QueueUrl=self.queue_url, AttributeNames=["ApproximateNumberOfMessages"]
        )["Attributes"]
        return int(attributes.get("ApproximateNumberOfMessages", 0))

    def _queue_is_empty(self, include_retries: bool) -> bool:
        names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesDelayed"]
        if include_retries:
            names.append("ApproximateNumberOfMessagesNotVisible")
        attributes = self._sqs.get_queue_attributes(QueueUrl=self.queue_url, AttributeNames=names)[
            "Attributes"
        ]
        return all(int(attributes.get(name, 0)) == 0 for name in names)

    def drain(self, timeout: float = 30.0, *, include_retries: bool = False) -> bool:
        """Wait until the queue is empty and no batch is in flight; False if ``timeout`` passes first.

        Messages hidden by a visibility timeout (failed ones waiting for a retry) count only with
        ``include_retries``.
        """
        if self._thread is None or not self._thread.is_alive():
            raise RuntimeError(f"{self.name}: the poller is not running")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._busy or not self._queue_is_empty(include_retries):
                time.sleep(0.05)
                continue
            # A receive may be returning messages right now; once the cycle in progress
            # has finished, anything it took has been handled.
            with self._progress:
                seen, target = self.processed, self._cycles + 1
                while self._cycles < target and not self._stop.is_set():
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return False
                    self._progress.wait(remaining)
                quiet = self.processed == seen and not self._busy
            if quiet and self._queue_is_empty(include_retries):
                return True
        return False
