"""The receivers the receipt benchmark compares, Lockgate's and the Powertools baseline, each with its
calls counted; the figures it collects per delivery; and the receiver core's reply as the handler
gives it (``load`` sends traffic to that too)."""

from __future__ import annotations

import statistics
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from benchmarks.github_deliveries import SECRET
from benchmarks.moto_counting import CallCounter, MotoTimer, quiet_logger


@dataclass
class PathFigures:
    """Per-delivery figures for one path (new or duplicate) of one receiver."""

    calls: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    backend_seconds: list[float] = field(default_factory=list)
    operations: Counter[str] = field(default_factory=Counter)
    statuses: Counter[int] = field(default_factory=Counter)

    @property
    def calls_per_delivery(self) -> float:
        return statistics.fmean(self.calls)

    @property
    def median_ms(self) -> float:
        return statistics.median(self.seconds) * 1000

    @property
    def median_ms_excl_moto(self) -> float:
        return (
            statistics.median(s - b for s, b in zip(self.seconds, self.backend_seconds, strict=True)) * 1000
        )

    def operations_per_delivery(self) -> str:
        n = len(self.calls)
        return ", ".join(f"{op} ×{count / n:g}" for op, count in sorted(self.operations.items()))


@dataclass
class Contender:
    """A receiver under test: how to post one API Gateway event, and what counts its calls."""

    name: str
    post: Callable[[dict[str, Any]], int]
    counter: CallCounter
    new: PathFigures = field(default_factory=PathFigures)
    duplicate: PathFigures = field(default_factory=PathFigures)

    def deliver(self, event: dict[str, Any], timer: MotoTimer, into: PathFigures | None) -> None:
        calls_before, backend_before = self.counter.total, timer.seconds
        operations_before = Counter(self.counter.operations)
        started = time.perf_counter()
        status = self.post(event)
        elapsed = time.perf_counter() - started
        if into is None:  # warm-up
            return
        into.calls.append(self.counter.total - calls_before)
        into.seconds.append(elapsed)
        into.backend_seconds.append(timer.seconds - backend_before)
        into.operations.update(self.counter.operations - operations_before)
        into.statuses[status] += 1


def answer(receiver: Any, event: dict[str, Any]) -> Any:
    """The receiver core's reply to one API Gateway v2 event, as the handler gives it (errors mapped)."""
    from lockgate.errors import LockgateError
    from lockgate.http import RawRequest, error_response

    try:
        return receiver.receive(RawRequest.from_apigw_v2(event))
    except LockgateError as exc:
        return error_response(exc)


def lockgate_receiver(session: Any, names: dict[str, str], clock: Any, secret_ref: str) -> Contender:
    """Lockgate's Receiver for one GitHub source, wired as the handler wires it, with its calls counted."""
    from lockgate.config import parse_config
    from lockgate.inbox.bodies import BodyStore
    from lockgate.inbox.queue import InboxQueue
    from lockgate.inbox.receipt import Receiver
    from lockgate.inbox.store import InboxStore
    from lockgate.secrets import SecretResolver
    from lockgate.telemetry import CountingMetrics

    config = parse_config({"sources": {"github": {"scheme": "github", "secrets": [secret_ref]}}})
    clients = {s: session.client(s) for s in ("dynamodb", "sqs", "s3", "secretsmanager")}
    receiver = Receiver(
        config=config,
        secrets=SecretResolver(
            {"GITHUB_WEBHOOK_SECRET": SECRET}, secretsmanager=lambda: clients["secretsmanager"], clock=clock
        ),
        inbox=InboxStore(clients["dynamodb"], names["InboxTable"]),
        queue=InboxQueue(clients["sqs"], names["InboxQueue"]),
        bodies=BodyStore(clients["s3"], names["BodyBucket"]),
        clock=clock,
        log=quiet_logger(),
        metrics=CountingMetrics(),
    )
    counter = CallCounter()
    counter.attach(*clients.values())
    receiver.check_secrets()

    return Contender("ours", lambda event: answer(receiver, event).status, counter)


def baseline_receiver(session: Any, names: dict[str, str], clock: Any) -> Contender:
    """The Powertools-idempotency baseline on the same tables and queue, with its calls counted."""
    from benchmarks.baseline import PowertoolsReceiver

    dynamodb, sqs = session.client("dynamodb"), session.client("sqs")
    baseline = PowertoolsReceiver(
        dynamodb,
        sqs,
        deliveries_table=names["InboxTable"],
        idempotency_table=names["StateTable"],
        queue_url=names["InboxQueue"],
        secret=SECRET,
        now=clock.now,
    )
    counter = CallCounter()
    counter.attach(dynamodb, sqs)
    return Contender("baseline", lambda e: int(baseline.handle(e)["statusCode"]), counter)
