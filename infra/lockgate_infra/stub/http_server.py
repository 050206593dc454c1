"""The stub's HTTP plumbing: a threading server on loopback that hands each request to the stub."""

from __future__ import annotations

import json
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol, cast


class Handles(Protocol):
    """What the server hands each request to (``StubAnthropic``)."""

    def handle(self, handler: BaseHTTPRequestHandler) -> None:
        """Answer one request."""


def send_json(
    handler: BaseHTTPRequestHandler,
    request_id: str,
    status: int,
    payload: object,
    headers: Mapping[str, str] | None = None,
) -> None:
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    handler.close_connection = True  # one request per connection: no idle keep-alive threads
    try:
        handler.send_response(status)
        handler.send_header("content-type", "application/json")
        handler.send_header("content-length", str(len(data)))
        handler.send_header("request-id", request_id)
        handler.send_header("connection", "close")
        for name, value in (headers or {}).items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(data)
    except OSError:
        return  # the client hung up (it timed out): there is no one left to answer


class StubHttpServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], stub: Handles) -> None:
        super().__init__(address, _Handler)
        self.stub = stub


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:  # noqa: N802 - the name http.server dispatches to
        cast(StubHttpServer, self.server).stub.handle(self)

    def do_GET(self) -> None:  # noqa: N802 - the name http.server dispatches to
        cast(StubHttpServer, self.server).stub.handle(self)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's signature
        """Quiet: tests and the demo print what matters themselves."""
