"""Load on the embedded local stack (loopback only): many concurrent senders, duplicates and forgeries.

Two receivers take the same traffic through the same gateway, moto server and tables, one after
the other: Lockgate's receiver function (``functions/webhook_receiver``), then the Powertools-
idempotency baseline from ``benchmarks/baseline.py`` (its pointers go to a scratch queue, so the
worker never sees them). Then the worker's pollers start and everything Lockgate stored must be
processed, once.

Three phases, in this order: the whole Lambda handler (with Powertools' logger and metrics
decorators), the same receiver core without them, and the baseline core. Later phases run against
fuller tables, so the order favours the baseline if anything.

Figures: deliveries per second (wall clock, all senders), and p50/p99 of the handler's own time:
the time inside the function minus the time it spent in AWS calls (botocore to the moto server
and back), i.e. our code, not moto's. Ratios are ours ÷ baseline, measured in one process.

Checks (exit 1 on any failure): stored = the distinct valid deliveries; every duplicate answered
200; every forgery answered 401; every stored delivery processed exactly once (done, attempt 1).

Run: ``python -m benchmarks.load [--deliveries 2000] [--senders 20]``; ~5–8 min for 2,000 on
2 cores, most of it the local worker draining the queue.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import logging
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from benchmarks.load_report import Phase, report
from benchmarks.load_traffic import Request, body, renamed, send_all, traffic

RECEIVER = "WebhookReceiverFunction"
FORGED = "not-the-secret-at-all"  # noqa: S105 - the forger's key, by design
Signer = Callable[[Request], dict[str, str]]
Invoke = Callable[[str, Any], Any]


class HandlerClock:
    """Per request: time inside the function, and the part of it spent in AWS calls (per thread)."""

    def __init__(self) -> None:
        self._local = threading.local()
        self._lock = threading.Lock()
        self.own_seconds: list[float] = []

    def aws_calls(self) -> AbstractContextManager[None]:
        """Count time inside botocore's API calls towards the calling thread's AWS time."""
        from lockgate_infra.api_calls import intercepted

        def timed(client: Any, operation: str, params: dict[str, Any], send: Callable[[], Any]) -> Any:
            started = time.perf_counter()
            try:
                return send()
            finally:
                self._local.aws = getattr(self._local, "aws", 0.0) + time.perf_counter() - started

        return intercepted(timed)

    def wrap(self, invoke: Callable[[str, Any], Any]) -> Callable[[str, Any], Any]:
        """The gateway's invoke, timed."""

        def timed(logical_id: str, event: Any) -> Any:
            self._local.aws = 0.0
            started = time.perf_counter()
            try:
                return invoke(logical_id, event)
            finally:
                own = time.perf_counter() - started - self._local.aws
                with self._lock:
                    self.own_seconds.append(own)

        return timed


def run(deliveries: int, senders: int, out: Any = sys.stdout) -> int:
    """Both phases, the processing check and the report; 0 when every check passed."""
    import os

    from lockgate_infra.local.stack import LocalStack

    requests = traffic(deliveries)
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    quiet = {
        "POWERTOOLS_LOG_LEVEL": "ERROR",
        "POWERTOOLS_METRICS_DISABLED": "true",
        "APPROVAL_CHANNELS": "print",
    }
    # The functions' own JSON logs and the gateway's error lines would bury the report.
    with _quiet_gateway(), contextlib.redirect_stdout(io.StringIO()), LocalStack(environment=quiet) as stack:
        signer, secret = _seeded(stack)
        gateway = stack.start_gateway(0)
        baseline = _baseline(stack, secret)
        _warm_up(gateway, baseline, signer, senders)
        phases = [
            _phase(gateway, name, invoke, renamed(requests, n), signer, senders)
            for n, (name, invoke) in enumerate(_contenders(stack, baseline))
        ]
        stack.start_pollers(wait_seconds=0)
        processed = stack.drain(timeout=max(120.0, deliveries * 0.4))  # the local poller does ~10/s
        rows = _inbox_rows(stack)
    return report(requests, phases, rows, processed, out)


def _seeded(stack: Any) -> tuple[Signer, str]:
    """The stack's secrets and workflows seeded; a signer for the traffic, and GitHub's secret."""
    from lockgate.config import load_config
    from lockgate.webhooks.signing import sign
    from lockgate_infra.local.run import seed_secrets
    from lockgate_infra.local.workflows import seed_workflows

    config = load_config(stack.config_path)
    secrets = seed_secrets(stack)
    seed_workflows(stack)
    source = config.sources["github"]

    def signer(request: Request) -> dict[str, str]:
        secret = FORGED if request.kind == "forged" else secrets["github"]
        return sign(source, secret, request.body, int(time.time()), request.delivery_id, "push")

    return signer, secrets["github"]


def _baseline(stack: Any, secret: str) -> Any:
    """The Powertools baseline on the stack's tables; its pointers go to a scratch queue, not the worker's."""
    from benchmarks.baseline import PowertoolsReceiver

    return PowertoolsReceiver(
        stack.client("dynamodb"),
        stack.client("sqs"),
        deliveries_table=stack.resources["InboxTable"],
        idempotency_table=stack.resources["StateTable"],
        queue_url=stack.client("sqs").create_queue(QueueName="baseline-load-scratch")["QueueUrl"],
        secret=secret,
        now=time.time,
    )


def _warm_up(gateway: Any, baseline: Any, signer: Signer, senders: int) -> None:
    """Warm both up (imports, first secret fetch, connections) outside the figures."""
    warm = [Request(f"warm-{n}", body(n), "new") for n in range(senders)]
    send_all(gateway.url, warm, signer, senders)
    gateway.invoke = lambda _, event: baseline.handle(event)
    send_all(
        gateway.url, [Request(f"warm-base-{n}", body(n), "new") for n in range(senders)], signer, senders
    )


def _contenders(stack: Any, baseline: Any) -> list[tuple[str, Invoke]]:
    """The three phases' receivers, in order: the whole handler, its core, the baseline core."""
    from benchmarks.receivers import answer

    receiver = stack.load_function(RECEIVER).module.receiver
    return [
        ("lockgate handler", stack.invoke),
        ("lockgate core", lambda _, event: answer(receiver, event).to_apigw()),  # without the decorators
        ("baseline core", lambda _, event: baseline.handle(event)),
    ]


def _phase(
    gateway: Any, name: str, invoke: Invoke, requests: list[Request], signer: Signer, senders: int
) -> Phase:
    """One receiver behind the gateway, timed, taking all the traffic."""
    clock = HandlerClock()
    with clock.aws_calls():
        gateway.invoke = clock.wrap(invoke)
        phase = Phase(name)
        phase.seconds, phase.statuses = send_all(gateway.url, requests, signer, senders)
        phase.own_seconds = clock.own_seconds
    return phase


@contextmanager
def _quiet_gateway() -> Iterator[None]:
    logger = logging.getLogger("lockgate_infra.local")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


def _inbox_rows(stack: Any) -> list[dict[str, Any]]:
    """The first phase's inbox rows (the whole handler's), to check what was stored and processed."""
    from lockgate.dynamo import read_all

    items = read_all(stack.client("dynamodb").scan, TableName=stack.resources["InboxTable"])
    return [i for i in items if i["pk"]["S"].startswith("github#p0-")]


def main(argv: list[str] | None = None) -> int:
    """Command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deliveries", type=int, default=2000)
    parser.add_argument("--senders", type=int, default=20)
    args = parser.parse_args(argv)
    return run(args.deliveries, args.senders)


if __name__ == "__main__":
    sys.exit(main())
