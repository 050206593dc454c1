"""A function's clients: one per service for the life of the environment, whatever asks for it."""

from __future__ import annotations

import threading
import time
from typing import Any

from lockgate.runtime.deps import OnePerService, lambda_deps
from lockgate.telemetry import CountingMetrics
from tests.support import LOG


def test_each_service_is_made_once_even_when_threads_ask_at_the_same_time() -> None:
    made: list[str] = []
    start = threading.Barrier(8)

    def make(service: str) -> Any:
        made.append(service)
        time.sleep(0.05)  # as long as a real client takes and more: without the lock, others would make too
        return object()

    clients = OnePerService(make)
    got: list[Any] = []

    def ask() -> None:
        start.wait()
        got.append(clients("dynamodb"))

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # Then one client was made and every thread holds it; another service gets its own
    assert made == ["dynamodb"] and all(client is got[0] for client in got)
    assert clients("sqs") is not got[0] and made == ["dynamodb", "sqs"]


def test_a_deployed_functions_deps_hand_out_one_client_per_service_with_its_timeouts() -> None:
    deps = lambda_deps({}, LOG, CountingMetrics(), timeout_seconds=10)
    db = deps.client("dynamodb")
    assert deps.client("dynamodb") is db and deps.client("sqs") is not db
    # And the client keeps the timeouts sized to the function (a 10 s receiver: 1 s to read)
    assert (db.meta.config.read_timeout, db.meta.config.connect_timeout) == (1.0, 0.5)
    assert deps.client("lambda").meta.config.read_timeout == 5.0
