"""The webhook receiver's object graph. Imports nothing of the agent (no anthropic, no pydantic)."""

from __future__ import annotations

from lockgate.config import ReceiptConfig
from lockgate.inbox.bodies import BodyStore
from lockgate.inbox.queue import InboxQueue
from lockgate.inbox.receipt import Receiver
from lockgate.inbox.store import InboxStore
from lockgate.runtime.deps import Deps
from lockgate.settings import ReceiverSettings


def build_receiver(settings: ReceiverSettings, config: ReceiptConfig, deps: Deps) -> Receiver:
    """Verify, store once, queue a pointer: the receiver for ``settings``."""
    return Receiver(
        config=config,
        secrets=deps.secrets,
        inbox=InboxStore(deps.client("dynamodb"), settings.inbox_table),
        queue=InboxQueue(deps.client("sqs"), settings.inbox_queue_url),
        bodies=BodyStore(deps.client("s3"), settings.body_bucket),
        clock=deps.clock,
        log=deps.log,
        metrics=deps.metrics,
    )
