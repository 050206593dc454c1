"""What every function is built from besides its settings: clients, secrets, a clock, logs, metrics."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from botocore.config import Config

from lockgate.clock import Clock, SystemClock
from lockgate.secrets import SecretResolver
from lockgate.telemetry import Log, Metrics

if TYPE_CHECKING:
    from lockgate.model.usage import UsageMetrics

ClientFactory = Callable[[str], Any]  # boto3 client factory, e.g. session.client


@dataclass(frozen=True)
class Deps:
    """A function's surroundings: the handler passes real ones, tests and the chaos harness fakes."""

    client: ClientFactory
    secrets: SecretResolver
    clock: Clock
    log: Log
    metrics: Metrics
    sleep: Callable[[float], None] = time.sleep  # backoff waits (a no-op under a fake clock)
    # Per-call dollars and tokens, made for the deployment's task names (the worker's EMF blob).
    usage_metrics: Callable[[frozenset[str]], UsageMetrics] | None = None


class OnePerService:
    """A client factory that makes each service's client once and hands out that one after.

    boto3 clients are thread-safe, and making one costs milliseconds of CPU (its event handlers
    are copied): a composition root asks for the same service many times, a secret read once more.
    """

    def __init__(self, make: ClientFactory) -> None:
        self._make = make
        self._clients: dict[str, Any] = {}
        self._lock = threading.Lock()

    def __call__(self, service: str) -> Any:
        """``service``'s client, made now if this is the first request for it."""
        with self._lock:
            if service not in self._clients:
                self._clients[service] = self._make(service)
            return self._clients[service]


def aws_config(timeout_seconds: float, connections: int = 10) -> Config:
    """Client timeouts and retries sized to a function's own timeout.

    botocore's defaults (60 s to connect, 60 s to read, legacy retries) would let one hung call
    outlive a 10 s receiver. Here the worst case of one call, every attempt timing out plus the
    standard mode's backoff, stays under half the function's time, so it can still answer (503,
    or hand the message back) before Lambda kills it. AWS answers in milliseconds when healthy.
    """
    connect = min(max(timeout_seconds / 30, 0.5), 3.0)
    read = min(max(timeout_seconds / 12, 1.0), 10.0)
    return Config(
        connect_timeout=connect,
        read_timeout=read,
        retries={"mode": "standard", "total_max_attempts": 2 if timeout_seconds < 60 else 3},
        max_pool_connections=max(10, connections),
    )


def lambda_deps(
    environ: Mapping[str, str],
    log: Log,
    metrics: Metrics,
    *,
    timeout_seconds: float,
    connections: int = 10,
    **extra: Any,
) -> Deps:
    """A deployed function's deps: one session's clients sized to its timeout, secrets, the system clock."""
    import boto3  # the Lambda runtime has it; imported here so tests of the layer need no session

    session = boto3.session.Session()
    config = aws_config(timeout_seconds, connections)
    # Lambda's Invoke waits for another function (the approval side asking the worker): its read
    # timeout allows that function's cold start, still well inside this one's time.
    invoke = config.merge(Config(read_timeout=min(max(timeout_seconds / 2, 5.0), 20.0)))

    def make(service: str) -> Any:
        chosen = invoke if service == "lambda" else config
        return session.client(service, config=chosen)  # type: ignore[call-overload]  # per-service overloads

    client = OnePerService(make)

    return Deps(
        client=client,
        secrets=SecretResolver(environ, secretsmanager=lambda: client("secretsmanager")),
        clock=SystemClock(),
        log=log,
        metrics=metrics,
        **extra,
    )
