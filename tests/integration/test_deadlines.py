"""AWS clients sized to the function's timeout: a hung endpoint costs a 503, not a Lambda timeout."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from lockgate.errors import LockgateError
from lockgate.http import HttpResponse, RawRequest, error_response
from lockgate.runtime.deps import aws_config, lambda_deps
from lockgate.runtime.receiver import build_receiver
from lockgate.settings import ReceiverSettings
from lockgate.telemetry import CountingMetrics
from lockgate.webhooks.signing import sign
from tests.support import LOG, SECRETS, make_config


class HungEndpoint:
    """A TCP server on loopback that accepts every connection and never answers."""

    def __init__(self) -> None:
        self._server = socket.create_server(("127.0.0.1", 0), backlog=64)
        self._held: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.getsockname()[1]}"

    @property
    def connections(self) -> int:
        return len(self._held)

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self._server.accept()
            except OSError:
                return  # closed
            self._held.append(connection)  # kept open, never read from or written to

    def close(self) -> None:
        self._server.close()
        for connection in self._held:
            connection.close()


@contextmanager
def hung_endpoint() -> Iterator[HungEndpoint]:
    endpoint = HungEndpoint()
    try:
        yield endpoint
    finally:
        endpoint.close()


def test_a_hung_aws_endpoint_gets_a_503_within_the_receivers_deadline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with hung_endpoint() as hung:
        # Given the deployed receiver's clients (lambda_deps, as its handler builds them) pointed at
        # an AWS endpoint that accepts connections and never answers
        monkeypatch.setenv("AWS_ENDPOINT_URL", hung.url)
        settings = ReceiverSettings.from_env(
            {
                "INBOX_TABLE": "lockgate-InboxTable",
                "INBOX_QUEUE_URL": f"{hung.url}/123456789012/lockgate-InboxQueue",
                "BODY_BUCKET": "lockgate-bodies",
                "RECEIVER_TIMEOUT_SECONDS": "10",  # as template.yaml sets it, equal to the Timeout
            }
        )
        config = make_config()
        metrics = CountingMetrics()
        deps = lambda_deps(SECRETS, LOG, metrics, timeout_seconds=settings.timeout_seconds)
        receiver = build_receiver(settings, config, deps)
        body = json.dumps({"id": "d-1", "type": "push"}).encode()
        headers = sign(
            config.sources["github"], SECRETS["GITHUB_SECRET"], body, int(time.time()), delivery_id="d-1"
        )
        event = {"pathParameters": {"source": "github"}, "headers": headers, "body": body.decode()}
        # When a signed delivery arrives
        replies: list[HttpResponse] = []
        started = time.monotonic()

        def receive() -> None:
            try:
                replies.append(receiver.receive(RawRequest.from_apigw_v2(event)))
            except LockgateError as exc:
                replies.append(error_response(exc))

        worker = threading.Thread(target=receive, daemon=True)
        worker.start()
        worker.join(timeout=settings.timeout_seconds)
        elapsed = time.monotonic() - started
        # Then it answers 503 (the provider retries) before the function's timeout, having tried
        # the store as many times as the retry policy allows and no more
        assert not worker.is_alive(), f"no answer within the {settings.timeout_seconds} s timeout"
        assert [r.status for r in replies] == [503]
        assert elapsed < settings.timeout_seconds
        assert hung.connections == aws_config(settings.timeout_seconds).retries["total_max_attempts"]


@pytest.mark.parametrize("timeout", [10, 30, 60, 120, 300, 900])
def test_one_calls_worst_case_fits_well_inside_the_function_timeout(timeout: int) -> None:
    config = aws_config(timeout)
    attempts = config.retries["total_max_attempts"]
    assert config.retries["mode"] == "standard" and attempts >= 2
    # every attempt timing out to connect or read, plus the standard mode's backoff (≤ 2^n s)
    worst = attempts * (config.connect_timeout + config.read_timeout) + sum(2**n for n in range(attempts - 1))
    assert worst <= timeout / 2
