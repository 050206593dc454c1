"""SQS: a received message hides for its visibility timeout, comes back unless deleted, and goes to
the dead-letter queue after maxReceiveCount receives.

The inbox queue carries only a delivery's key; the worker relies on redelivery for retries
(a changed visibility is its backoff) and on the DLQ for what keeps failing.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from tests.conformance.conftest import Cloud

VISIBILITY = (
    "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-visibility-timeout.html"
)
DEAD_LETTERS = (
    "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-dead-letter-queues.html"
)
SEND_MESSAGE = "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SendMessage.html"


def receive(sqs: Any, url: str, **extra: Any) -> list[dict[str, Any]]:
    return list(
        sqs.receive_message(
            QueueUrl=url, MaxNumberOfMessages=10, AttributeNames=["ApproximateReceiveCount"], **extra
        ).get("Messages", [])
    )


def receive_eventually(cloud: Cloud, url: str) -> dict[str, Any]:
    sqs = cloud.client("sqs")
    return cloud.eventually(lambda: next(iter(receive(sqs, url)), None), "a message to become visible")


def test_a_received_message_hides_then_returns_with_its_receive_count(
    cloud: Cloud, make_queue: Callable[..., str]
) -> None:
    """AWS (Visibility timeout): a received message stays in the queue but no other receive gets it
    until the timeout ends; then it is delivered again, ApproximateReceiveCount counting receives."""
    sqs, url = cloud.client("sqs"), make_queue(visibility=1)
    sqs.send_message(QueueUrl=url, MessageBody='{"delivery": "github#1"}')

    first = receive_eventually(cloud, url)
    hidden = receive(sqs, url)
    again = receive_eventually(cloud, url)

    assert hidden == []
    assert again["Body"] == first["Body"] == '{"delivery": "github#1"}'
    assert again["MessageId"] == first["MessageId"]
    assert (
        first["Attributes"]["ApproximateReceiveCount"],
        again["Attributes"]["ApproximateReceiveCount"],
    ) == (
        "1",
        "2",
    )


def test_a_deleted_message_never_returns(cloud: Cloud, make_queue: Callable[..., str]) -> None:
    """AWS (Visibility timeout): a consumer deletes a message after processing it, so it is not
    received again when the timeout ends."""
    sqs, url = cloud.client("sqs"), make_queue(visibility=1)
    sqs.send_message(QueueUrl=url, MessageBody="done once")
    message = receive_eventually(cloud, url)

    sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    time.sleep(1.5)  # past the visibility timeout the message had

    assert receive(sqs, url) == []


def test_a_changed_visibility_decides_when_the_message_returns(
    cloud: Cloud, make_queue: Callable[..., str]
) -> None:
    """AWS (ChangeMessageVisibility; Visibility timeout): the timeout of a received message can be
    changed; 0 makes it visible again at once. Lockgate: the worker's retry backoff."""
    sqs, url = cloud.client("sqs"), make_queue(visibility=600)
    sqs.send_message(QueueUrl=url, MessageBody="retry me")
    message = receive_eventually(cloud, url)
    assert receive(sqs, url) == []

    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0)

    assert receive_eventually(cloud, url)["Body"] == "retry me"


def test_a_delayed_message_is_invisible_until_its_delay_ends(
    cloud: Cloud, make_queue: Callable[..., str]
) -> None:
    """AWS (SendMessage, DelaySeconds): "The length of time, in seconds, for which to delay a
    specific message"; it cannot be received before. Lockgate: a re-queued delivery's delay."""
    sqs, url = cloud.client("sqs"), make_queue()
    sent = time.monotonic()
    sqs.send_message(QueueUrl=url, MessageBody="later", DelaySeconds=1)

    assert receive(sqs, url) == []
    assert receive_eventually(cloud, url)["Body"] == "later"
    assert time.monotonic() - sent >= 1.0


def test_a_message_received_max_receive_count_times_goes_to_the_dead_letter_queue(
    cloud: Cloud, make_queue: Callable[..., str]
) -> None:
    """AWS (Dead-letter queues): "maxReceiveCount - The number of times a consumer can receive a
    message from a source queue before it's moved to a dead-letter queue"; the receive that
    would exceed it moves the message instead of returning it, and the message keeps its body."""
    sqs = cloud.client("sqs")
    dead_letters = make_queue()
    url = make_queue(visibility=600, dead_letters=dead_letters, max_receives=2)
    sqs.send_message(QueueUrl=url, MessageBody="poison")

    for _ in range(2):
        message = receive_eventually(cloud, url)
        sqs.change_message_visibility(
            QueueUrl=url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
        )

    def moved() -> dict[str, Any] | None:
        assert receive(sqs, url) == [], "received more than maxReceiveCount times"
        return next(iter(receive(sqs, dead_letters)), None)

    assert cloud.eventually(moved, "the message in the dead-letter queue")["Body"] == "poison"
