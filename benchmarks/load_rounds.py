"""A load phase sent in rounds, and the inbox sweep that picks up what faults stranded.

moto's SendMessage slows as a queue fills (4 ms into an empty queue, 26 ms at 2,500 messages,
measured with moto 5.2), so a phase of 20,000 deliveries sent in one go would measure moto. A phase
is sent in rounds of at most ``size`` requests instead, and between rounds, untimed, each receiver's
queue is emptied as after a phase: the worker drains Lockgate's, the baseline's is emptied. Only the
rounds' sending is timed.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from lockgate.clock import FixedClock
from lockgate.jobs.contract import JobContext
from lockgate.telemetry import CountingMetrics

LOG = logging.getLogger("benchmarks.load")
SWEEP_SECONDS = 300  # the sweep's deadline, as a short scheduled run has


@dataclass
class Rounds:
    """How a phase's traffic is split: at most ``size`` requests a round (0: all at once)."""

    size: int = 0
    resent: Counter[str] = field(default_factory=Counter)  # the provider's resends, by reason

    def split(self, requests: list[Any]) -> Iterator[tuple[list[Any], bool]]:
        """Each round's requests, and whether another round follows."""
        size = self.size or len(requests) or 1
        for start in range(0, len(requests), size):
            yield requests[start : start + size], start + size < len(requests)


def sweep_stranded(stack: Any) -> dict[str, int]:
    """Run the inbox sweep as its schedule would, once every delivery stored without a pointer has
    waited long enough to be re-queued (``requeue_after_seconds`` from now); its counts."""
    from lockgate.config import load_config
    from lockgate.inbox.queue import DeadLetters, InboxQueue
    from lockgate.inbox.store import InboxStore
    from lockgate.jobs.builtin.sweep_inbox import NAME, InboxSweep

    db, sqs = stack.client("dynamodb"), stack.client("sqs")
    settings = load_config(stack.config_path).inbox
    sweep = InboxSweep(
        inbox=InboxStore(db, stack.resources["InboxTable"]),
        queue=InboxQueue(sqs, stack.resources["InboxQueue"]),
        dead_letters=DeadLetters(sqs, stack.resources["InboxDLQ"]),
        settings=settings,
    )
    clock = FixedClock(time.time() + settings.requeue_after_seconds + 1)
    counts: Counter[str] = Counter()
    cursor = None
    while True:
        now = clock.now()
        result = sweep(
            JobContext(
                name=NAME,
                scheduled_time=dt.datetime.fromtimestamp(now, dt.UTC).isoformat(),
                deadline=now + SWEEP_SECONDS,
                clock=clock,
                log=LOG,
                metrics=CountingMetrics(),
                cursor=cursor,
            )
        )
        counts.update(result.counts)
        if result.done:
            return dict(counts)
        cursor = result.cursor


def between_rounds(stack: Any, queue_url: str, drain: Callable[[], bool] | None) -> Callable[[], None]:
    """What runs between two rounds: the worker drains Lockgate's queue; the baseline's is emptied
    (received and deleted: PurgeQueue may run once a minute)."""
    sqs = stack.client("sqs")

    def empty() -> None:
        if drain is not None:
            if not drain():
                raise RuntimeError("the worker did not drain its queue between rounds")
            return
        while messages := sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10).get("Messages"):
            entries = [{"Id": str(n), "ReceiptHandle": m["ReceiptHandle"]} for n, m in enumerate(messages)]
            sqs.delete_message_batch(QueueUrl=queue_url, Entries=entries)

    return empty


@contextmanager
def quiet_gateway() -> Iterator[None]:
    """The local stack's log lines (the gateway's errors for forgeries) off while inside."""
    logger = logging.getLogger("lockgate_infra.local")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


def process(stack: Any, timeout: float) -> bool:
    """The worker takes everything in its queue (pollers only now, so never during a timed round)."""
    from lockgate_infra.local.sources import start_sqs_pollers

    where = (stack.plan, stack.resources, stack.client, stack.invoke, stack.load_function)
    pollers = start_sqs_pollers(*where, wait_seconds=0)
    try:
        return all(poller.drain(timeout) for poller in pollers)
    finally:
        for poller in pollers:
            poller.stop()
