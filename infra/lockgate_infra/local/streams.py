"""A DynamoDB stream event source mapping: read a table's stream through moto, invoke a function.

Lambda's rules, kept small: records in order, batches of at most ``batch_size``; with
``ReportBatchItemFailures`` a reported failure (its ``itemIdentifier`` is the record's sequence
number) is redelivered from that record on; a handler that raises gets the whole batch again.
After ``maximum_retry_attempts`` retries the batch is given up with a log line and, when the
mapping has an on-failure SQS destination, a record of it in that queue, as Lambda sends.
"""

from __future__ import annotations

import base64
import datetime
import json
import logging
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from lockgate_infra.local.background import Background
from lockgate_infra.local.health import Health
from lockgate_infra.local.poller import failed_message_ids
from lockgate_infra.local.stream_position import last_sequence_number

log = logging.getLogger("lockgate_infra.local")

DEFAULT_MAXIMUM_RETRY_ATTEMPTS = 5  # locally; Lambda's default is -1 (until the record expires)


def _lambda_attribute(value: dict[str, Any]) -> dict[str, Any]:
    """An AttributeValue as Lambda's JSON event carries it: binary values base64-encoded."""
    ((kind, inner),) = value.items()
    if kind == "B":
        return {"B": base64.b64encode(inner).decode()}
    if kind == "BS":
        return {"BS": [base64.b64encode(b).decode() for b in inner]}
    if kind == "M":
        return {"M": {k: _lambda_attribute(v) for k, v in inner.items()}}
    if kind == "L":
        return {"L": [_lambda_attribute(v) for v in inner]}
    return {kind: inner}


def _image(item: dict[str, Any]) -> dict[str, Any]:
    return {name: _lambda_attribute(value) for name, value in item.items()}


def stream_record(record: dict[str, Any], stream_arn: str, region: str) -> dict[str, Any]:
    """A Lambda DynamoDB stream event record for a GetRecords record."""
    change = record["dynamodb"]
    dynamodb: dict[str, Any] = {
        "Keys": _image(change.get("Keys") or {}),
        "SequenceNumber": change["SequenceNumber"],
        "SizeBytes": change.get("SizeBytes", 0),
        "StreamViewType": change.get("StreamViewType", "NEW_IMAGE"),
    }
    created = change.get("ApproximateCreationDateTime")
    if isinstance(created, datetime.datetime):
        dynamodb["ApproximateCreationDateTime"] = int(created.timestamp())
    elif created is not None:
        dynamodb["ApproximateCreationDateTime"] = created
    for image in ("NewImage", "OldImage"):
        if image in change:
            dynamodb[image] = _image(change[image])
    out: dict[str, Any] = {
        "eventID": record.get("eventID") or uuid.uuid4().hex,
        "eventName": record["eventName"],
        "eventVersion": "1.1",
        "eventSource": "aws:dynamodb",
        "awsRegion": record.get("awsRegion") or region,
        "dynamodb": dynamodb,
        "eventSourceARN": stream_arn,
    }
    if "userIdentity" in record:  # TTL deletions
        out["userIdentity"] = record["userIdentity"]
    return out


class StreamPoller(Background):
    """One thread that feeds a table's stream to a function in batches."""

    def __init__(
        self,
        dynamodb: Any,
        streams: Any,
        table_name: str,
        invoke: Callable[[dict[str, Any]], Any],
        *,
        batch_size: int = 100,
        starting_position: str = "LATEST",
        report_batch_item_failures: bool = False,
        maximum_retry_attempts: int | None = None,
        bisect_on_error: bool = False,
        on_failure: Callable[[dict[str, Any]], None] | None = None,
        function_arn: str = "",
        poll_interval: float = 0.05,
        retry_delay: float = 0.05,
        region: str = "us-east-1",
        name: str = "",
        function: str = "",
    ) -> None:
        table = dynamodb.describe_table(TableName=table_name)["Table"]
        self.stream_arn: str | None = table.get("LatestStreamArn")
        if not self.stream_arn:
            raise ValueError(f"table {table_name} has no stream: give it a StreamSpecification")
        self._streams = streams
        self.table_name = table_name
        self._invoke = invoke
        self._batch_size = max(1, min(batch_size, 10_000))
        self._limit = self._batch_size  # halved while bisecting a failing batch
        self._starting_position = starting_position
        self._report_failures = report_batch_item_failures
        self._max_retries = (
            DEFAULT_MAXIMUM_RETRY_ATTEMPTS
            if maximum_retry_attempts is None or maximum_retry_attempts < 0
            else maximum_retry_attempts
        )
        self._bisect = bisect_on_error
        self._on_failure = on_failure
        self._function_arn = function_arn
        self._poll_interval = poll_interval
        self._retry_delay = retry_delay
        self._region = region
        self.name = name or table_name
        self.function = function  # its logical id, for the status (its Timeout)
        self.health = Health()
        self.shard_id = ""
        self.position: str | None = None  # the last record it moved past (None: none yet, from the start)
        self._iterator: str | None = None
        self._retry_from: str | None = None  # sequence number being retried
        self._attempts = 0
        self._stop = threading.Event()
        self._progress = threading.Condition()
        self._started_cycles = 0
        self._last_idle_cycle = 0
        self.processed = 0  # records handed to the function (retries included)
        self.invocations = 0
        self.failed_invocations = 0
        self.dropped = 0  # records given up after the retries

    def start(self) -> None:
        """Take the shard iterator now (so LATEST means "from this call on"), then poll in a thread."""
        description = self._streams.describe_stream(StreamArn=self.stream_arn)["StreamDescription"]
        (shard,) = description["Shards"][-1:]  # moto keeps one shard per stream
        self.shard_id = shard["ShardId"]
        self._iterator = self._new_iterator(self._starting_position)
        if self._starting_position == "LATEST":
            # What the stream holds already is not for it. Read after taking the iterator, so that
            # a record written in between counts as passed, never as waiting for ever.
            self.position = last_sequence_number(self._streams, str(self.stream_arn), self.shard_id)
        self._start_thread(f"stream-poller {self.name}")

    def _new_iterator(self, kind: str, sequence_number: str | None = None) -> str:
        extra = {} if sequence_number is None else {"SequenceNumber": sequence_number}
        response = self._streams.get_shard_iterator(
            StreamArn=self.stream_arn, ShardId=self.shard_id, ShardIteratorType=kind, **extra
        )
        return str(response["ShardIterator"])

    def _run(self) -> None:
        while not self._stop.is_set():
            with self._progress:
                self._started_cycles += 1
                cycle = self._started_cycles
            try:
                idle = self._poll_once()
            except (BotoCoreError, ClientError) as exc:
                if not self._stop.is_set():
                    self.health.read(exc)
                    log.warning("%s: reading the stream failed (%s); retrying", self.name, exc)
                    self._stop.wait(1.0)
                continue
            with self._progress:
                if idle:
                    self._last_idle_cycle = cycle
                self._progress.notify_all()
            self._stop.wait(self._poll_interval if idle else self._retry_delay if self._retry_from else 0)

    def _poll_once(self) -> bool:
        """One GetRecords and its batch; True if there was nothing to do."""
        response = self._streams.get_records(ShardIterator=self._iterator, Limit=self._limit)
        self.health.read()
        records = response.get("Records") or []
        if not records:
            self._iterator = response.get("NextShardIterator") or self._iterator
            self._retry_from = None
            return True
        failed_from = self._deliver(records)
        if failed_from is None:
            self._retry_from, self._attempts, self._limit = None, 0, self._batch_size
            self._iterator = response["NextShardIterator"]
            self.position = str(records[-1]["dynamodb"]["SequenceNumber"])
            return False
        if failed_from != self._retry_from:
            self._retry_from, self._attempts = failed_from, 0
        self._attempts += 1
        if self._attempts > self._max_retries:
            dropped = [r for r in records if int(r["dynamodb"]["SequenceNumber"]) >= int(failed_from)]
            self.dropped += len(dropped)
            log.error("%s: giving up %d record(s) from sequence number %s after %d retries",
                      self.name, len(dropped), failed_from, self._max_retries)  # fmt: skip
            self._send_failure(dropped)
            self._retry_from, self._attempts, self._limit = None, 0, self._batch_size
            self._iterator = response["NextShardIterator"]
            self.position = str(records[-1]["dynamodb"]["SequenceNumber"])
            return False
        self._iterator = self._new_iterator("AT_SEQUENCE_NUMBER", failed_from)
        return False

    def _deliver(self, records: list[dict[str, Any]]) -> str | None:
        """Invoke with one batch; the sequence number to redeliver from, or None if all succeeded."""
        self.invocations += 1
        self.processed += len(records)
        assert self.stream_arn is not None
        event = {"Records": [stream_record(r, self.stream_arn, self._region) for r in records]}
        numbers = [str(r["dynamodb"]["SequenceNumber"]) for r in records]
        self.health.invoking(len(records), self.function)
        try:
            response = self._invoke(event)
            failed = failed_message_ids(response, set(numbers)) if self._report_failures else set()
        except Exception as exc:  # noqa: BLE001 - as in Lambda: the whole batch is retried
            self.health.invoked(exc)
            self.failed_invocations += 1
            log.exception("%s: batch of %d stream records failed; retrying it", self.name, len(records))
            if self._bisect and len(records) > 1:
                self._limit = max(1, len(records) // 2)
            return numbers[0]
        self.health.invoked()
        if not failed:
            return None
        first = min(failed, key=int)
        log.info("%s: %d of %d stream records reported as failed; redelivering from %s",
                 self.name, len(failed), len(records), first)  # fmt: skip
        return first

    def _send_failure(self, records: list[dict[str, Any]]) -> None:
        if self._on_failure is None or not records:
            return
        now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"

        def arrival(record: dict[str, Any]) -> str:
            created = record["dynamodb"].get("ApproximateCreationDateTime")
            if isinstance(created, datetime.datetime):
                return created.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
            return now

        message = {  # the shape of Lambda's on-failure record for a stream batch
            "requestContext": {
                "requestId": str(uuid.uuid4()),
                "functionArn": self._function_arn,
                "condition": "RetryAttemptsExhausted",
                "approximateInvokeCount": self._attempts,
            },
            "responseContext": {"statusCode": 200, "executedVersion": "$LATEST", "functionError": ""},
            "version": "1.0",
            "timestamp": now,
            "DDBStreamBatchInfo": {
                "shardId": self.shard_id,
                "startSequenceNumber": records[0]["dynamodb"]["SequenceNumber"],
                "endSequenceNumber": records[-1]["dynamodb"]["SequenceNumber"],
                "approximateArrivalOfFirstRecord": arrival(records[0]),
                "approximateArrivalOfLastRecord": arrival(records[-1]),
                "batchSize": len(records),
                "streamArn": self.stream_arn,
            },
        }
        try:
            self._on_failure(message)
        except Exception:  # noqa: BLE001 - the record is already given up; say so and go on
            log.exception("%s: could not record the failed batch: %s", self.name, json.dumps(message))

    def drain(self, timeout: float = 30.0, *, include_retries: bool = True) -> bool:
        """Wait until a whole poll that began after this call found nothing to do; False on timeout.

        Retries are always waited for (they are immediate, and capped); ``include_retries`` is
        accepted for the same call shape as the SQS poller.
        """
        del include_retries
        if self._thread is None or not self._thread.is_alive():
            raise RuntimeError(f"{self.name}: the poller is not running")
        deadline = time.monotonic() + timeout
        with self._progress:
            mark = self._started_cycles
            while self._last_idle_cycle <= mark:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._progress.wait(remaining)
        return True
