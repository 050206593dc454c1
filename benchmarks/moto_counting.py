"""Counting AWS calls and timing moto, over template.yaml's resources in in-process moto, with the
code under test logging nowhere."""

from __future__ import annotations

import logging
import os
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

TEMPLATE = Path(__file__).resolve().parent.parent / "template.yaml"


@dataclass
class CallCounter:
    """Counts HTTP requests (``before-send``) per operation over the clients it is attached to."""

    total: int = 0
    operations: Counter[str] = field(default_factory=Counter)

    def attach(self, *clients: Any) -> None:
        for client in clients:
            client.meta.events.register_first("before-send", self._count, unique_id="benchmark-call-counter")

    def _count(self, request: Any, event_name: str, **_: Any) -> None:
        service, operation = event_name.split(".", 2)[1:]  # before-send.<service>.<operation>
        self.total += 1
        self.operations[f"{service}.{operation}"] += 1


@dataclass
class MotoTimer:
    """Seconds spent inside moto's request dispatch (the fake AWS backend)."""

    seconds: float = 0.0
    clock: Callable[[], float] = time.perf_counter  # time.thread_time: the calling thread's CPU only


@contextmanager
def timed_moto(timer: MotoTimer) -> Iterator[None]:
    """Add the time moto spends answering each request to ``timer``."""
    from moto.core.botocore_stubber import BotocoreStubber

    original = BotocoreStubber.process_request

    def timed(self: BotocoreStubber, request: Any) -> Any:
        started = timer.clock()
        try:
            return original(self, request)
        finally:
            timer.seconds += timer.clock() - started

    BotocoreStubber.process_request = timed  # type: ignore[method-assign]
    try:
        yield
    finally:
        BotocoreStubber.process_request = original  # type: ignore[method-assign]


@contextmanager
def moto_stack() -> Iterator[tuple[Any, dict[str, str]]]:
    """In-process moto with template.yaml's tables, queues and bucket; yields (session, names)."""
    import boto3

    from lockgate_infra.local.fidelity import embedded_aws
    from lockgate_infra.local.provision import create_resources
    from lockgate_infra.local.template import LocalPlan, load_template

    # Nothing may send a call anywhere but moto: no endpoint overrides, no profiles.
    scrubbed = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("AWS_ENDPOINT_URL") and k not in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE")
    }
    fake = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    with mock.patch.dict(os.environ, {**scrubbed, **fake}, clear=True), embedded_aws():
        session = boto3.session.Session(region_name="us-east-1")
        plan = LocalPlan.from_template(load_template(TEMPLATE))
        yield session, create_resources(plan, session)


def quiet_logger() -> logging.Logger:
    """The logger handed to the code under test: its lines would bury the report."""
    log = logging.getLogger("lockgate.benchmark")
    log.addHandler(logging.NullHandler())
    log.propagate = False
    return log
