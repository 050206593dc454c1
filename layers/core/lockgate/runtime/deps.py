"""What every function is built from besides its settings: clients, secrets, a clock, logs, metrics."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lockgate.clock import Clock, SystemClock
from lockgate.secrets import SecretResolver
from lockgate.telemetry import Log, Metrics, NoTracing, Tracing

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
    tracing: Tracing = field(default_factory=NoTracing)
    sleep: Callable[[float], None] = time.sleep  # backoff waits (a no-op under a fake clock)
    # Per-call dollars and tokens, made for the deployment's task names (the worker's EMF blob).
    usage_metrics: Callable[[frozenset[str]], UsageMetrics] | None = None


def lambda_deps(environ: Mapping[str, str], log: Log, metrics: Metrics, **extra: Any) -> Deps:
    """A deployed function's deps: one boto3 session's clients, secrets by reference, the system clock."""
    import boto3  # the Lambda runtime has it; imported here so tests of the layer need no session

    session = boto3.session.Session()
    return Deps(
        client=session.client,  # type: ignore[arg-type]  # boto3-stubs overloads per service name
        secrets=SecretResolver(environ, secretsmanager=lambda: session.client("secretsmanager")),
        clock=SystemClock(),
        log=log,
        metrics=metrics,
        **extra,
    )
