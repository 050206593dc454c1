"""The inbox's dead-letter queue, as an operator handles it: its depth, and removing the letters of
deliveries that were sent round again.

A dead letter carries only the delivery key (the SQS redrive moves the queue's own pointer, the
worker's set-aside adds the error). SQS cannot delete by content, so the queue is read in batches:
a letter for one of the keys is deleted; every other letter stays invisible until the sweep ends,
so the next receive reaches letters it has not seen yet (a DLQ larger than one batch), and is then
made visible again at once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from lockgate.errors import QueueUnavailable
from lockgate.inbox.queue import decode_pointer

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

BATCH = 10  # SQS's largest receive and batch size
# Long enough to read the whole queue once; letters left out come back by themselves after this.
HOLD_SECONDS = 300
# Receives that return nothing before the sweep ends (short polling samples servers; an empty
# answer does not prove the queue is empty).
EMPTY_RECEIVES = 3


class DeadLetterQueue:
    """Reads and prunes the InboxDLQ."""

    def __init__(self, sqs: SQSClient, url: str) -> None:
        self._sqs = sqs
        self._url = url

    def depth(self) -> int:
        """Approximately how many letters wait (what the DLQ alarm watches)."""
        attrs = self._call(
            self._sqs.get_queue_attributes,
            QueueUrl=self._url,
            AttributeNames=["ApproximateNumberOfMessages"],
        )["Attributes"]
        return int(attrs.get("ApproximateNumberOfMessages", 0))

    def remove(self, keys: set[str]) -> int:
        """Delete every letter for one of ``keys``; leave the others as they were. Returns how many went."""
        if not keys:
            return 0
        held: list[str] = []
        removed, empty = 0, 0
        try:
            while empty < EMPTY_RECEIVES:
                messages = self._call(
                    self._sqs.receive_message,
                    QueueUrl=self._url,
                    MaxNumberOfMessages=BATCH,
                    VisibilityTimeout=HOLD_SECONDS,
                ).get("Messages", [])
                empty = 0 if messages else empty + 1
                for message in messages:
                    if _key(message.get("Body", "")) in keys:
                        handle = message["ReceiptHandle"]
                        self._call(self._sqs.delete_message, QueueUrl=self._url, ReceiptHandle=handle)
                        removed += 1
                    else:
                        held.append(message["ReceiptHandle"])
        finally:
            self._release(held)
        return removed

    def _release(self, handles: list[str]) -> None:
        """Make held letters visible again now, in batches."""
        for i in range(0, len(handles), BATCH):
            entries = [
                {"Id": str(n), "ReceiptHandle": handle, "VisibilityTimeout": 0}
                for n, handle in enumerate(handles[i : i + BATCH])
            ]
            self._call(self._sqs.change_message_visibility_batch, QueueUrl=self._url, Entries=entries)

    @staticmethod
    def _call(operation: Callable[..., Any], **request: Any) -> Any:
        try:
            return operation(**request)
        except (ClientError, BotoCoreError) as exc:
            raise QueueUnavailable(f"the dead-letter queue cannot be read or changed ({exc})") from exc


def _key(body: str) -> str | None:
    """The delivery a letter is for; None for a message that is not an inbox pointer."""
    try:
        return decode_pointer(body)
    except (ValueError, TypeError):
        return None
