"""SQS adapters: the inbox queue carries only keys, never bodies."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from botocore.exceptions import BotoCoreError, ClientError

from lockgate.errors import QueueUnavailable

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

# SQS caps a message's visibility timeout at 12 hours.
MAX_VISIBILITY_SECONDS = 43_200


class InboxQueue:
    """Sends delivery pointers and defers messages for backoff."""

    def __init__(self, sqs: SQSClient, queue_url: str) -> None:
        self._sqs = sqs
        self._url = queue_url

    def send(self, pk: str, delay_seconds: int = 0) -> None:
        """Queue a pointer to a stored delivery."""
        try:
            self._sqs.send_message(
                QueueUrl=self._url,
                MessageBody=encode_pointer(pk),
                DelaySeconds=max(0, min(delay_seconds, 900)),
            )
        except (ClientError, BotoCoreError) as exc:
            raise QueueUnavailable(type(exc).__name__) from exc

    def defer(self, receipt_handle: str, seconds: int) -> None:
        """Make a received message visible again only after ``seconds`` (backoff)."""
        try:
            self._sqs.change_message_visibility(
                QueueUrl=self._url,
                ReceiptHandle=receipt_handle,
                VisibilityTimeout=max(0, min(seconds, MAX_VISIBILITY_SECONDS)),
            )
        except (ClientError, BotoCoreError) as exc:
            raise QueueUnavailable(type(exc).__name__) from exc


class DeadLetters:
    """Where deliveries past the attempt limit are set aside, with their error."""

    def __init__(self, sqs: SQSClient, queue_url: str) -> None:
        self._sqs = sqs
        self._url = queue_url

    def send(self, pk: str, error: str) -> None:
        """Set a delivery aside."""
        try:
            self._sqs.send_message(
                QueueUrl=self._url, MessageBody=json.dumps({"pk": pk, "error": error[:500]})
            )
        except (ClientError, BotoCoreError) as exc:
            raise QueueUnavailable(type(exc).__name__) from exc


def encode_pointer(pk: str) -> str:
    """The message body for a delivery."""
    return json.dumps({"pk": pk})


def decode_pointer(body: str) -> str:
    """The delivery key in a message body; ValueError if the message is not ours."""
    data = json.loads(body)
    if not isinstance(data, dict) or not isinstance(data.get("pk"), str) or not data["pk"]:
        raise ValueError("message is not an inbox pointer")
    return str(data["pk"])
