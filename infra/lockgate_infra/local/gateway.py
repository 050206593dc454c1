"""A small HTTP server that behaves like an API Gateway HTTP API with payload format 2.0."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self
from urllib.parse import unquote, urlsplit

from lockgate_infra.local.apigw import build_event, http_response
from lockgate_infra.local.functions import Route
from lockgate_infra.serving import ThreadedServer

log = logging.getLogger("lockgate_infra.local")

Invoke = Callable[[str, dict[str, Any]], Any]  # (function logical id, event) → response
MAX_BODY_BYTES = 10 * 1024 * 1024  # API Gateway's payload limit
_PARAMETER = re.compile(r"^\{([^}]+?)(\+?)\}$")


@dataclass(frozen=True)
class _CompiledRoute:
    route: Route
    pattern: re.Pattern[str]
    names: tuple[str, ...]
    rank: tuple[int, ...]


class RouteTable:
    """Finds the most specific route, as API Gateway does: literal segments beat parameters,
    parameters beat greedy ``{proxy+}``, a named method beats ``ANY``, ``$default`` comes last."""

    def __init__(self, routes: Sequence[Route]) -> None:
        self._routes = sorted((self._compile(r) for r in routes), key=lambda c: c.rank)

    @staticmethod
    def _compile(route: Route) -> _CompiledRoute:
        if route.path == "$default":
            return _CompiledRoute(route, re.compile(".*", re.DOTALL), (), (1, 0, 0, 0))
        parts, names, literals, greedy = [], [], 0, 0
        for segment in route.path.strip("/").split("/"):
            parameter = _PARAMETER.match(segment)
            if parameter is None:
                parts.append(re.escape(segment))
                literals += 1
                continue
            names.append(parameter.group(1))
            greedy = greedy or int(bool(parameter.group(2)))
            parts.append("(.+)" if parameter.group(2) else "([^/]+)")
        pattern = re.compile("/" + "/".join(parts), re.DOTALL)
        return _CompiledRoute(
            route, pattern, tuple(names), (0, greedy, -literals, int(route.method == "ANY"))
        )

    def match(self, method: str, path: str) -> tuple[Route, dict[str, str]] | None:
        """The route for ``method path`` and its path parameters, or None."""
        for compiled in self._routes:
            if compiled.route.method not in ("ANY", method.upper()):
                continue
            found = compiled.pattern.fullmatch(path)
            if found is not None:
                return compiled.route, dict(zip(compiled.names, found.groups(), strict=True))
        return None


class Gateway(ThreadedServer):
    """Serves routes on ``host:port`` and invokes their functions with 2.0 events."""

    thread_name = "gateway"

    def __init__(
        self,
        routes: Sequence[Route],
        invoke: Invoke,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        always_base64: bool = False,
        max_body_bytes: int = MAX_BODY_BYTES,
    ) -> None:
        self.routes = RouteTable(routes)
        self.invoke = invoke
        self.always_base64 = always_base64
        self.max_body_bytes = max_body_bytes
        self._address = (host, port)

    def start(self) -> Self:
        """Bind and serve in a daemon thread."""
        self.serve(_Server(self._address, _handler_for(self)))
        return self

    @property
    def port(self) -> int:
        """The port it listens on (the one the OS chose when asked for 0)."""
        return int(self.url.rsplit(":", 1)[1])


class _Server(ThreadingHTTPServer):
    """Threads per connection, and a listen backlog deep enough for many concurrent senders
    (the default of 5 resets connections under load, which API Gateway never does)."""

    daemon_threads = True
    request_queue_size = 128


class _GatewayHandler(BaseHTTPRequestHandler):
    """One request: routed, turned into a payload-2.0 event, answered with the function's reply."""

    server_version = "lockgate-local-gateway"
    gateway: Gateway  # set per server by _handler_for

    def dispatch(self) -> None:
        started = time.monotonic()
        status = self._respond()
        log.info("%s %s -> %d (%d ms)", self.command, self.path, status, (time.monotonic() - started) * 1000)

    def _respond(self) -> int:
        body = self._read_body()
        if body is None:
            return self._send(
                413, [("content-type", "application/json")], b'{"message":"Request Entity Too Large"}'
            )
        matched = self.gateway.routes.match(self.command, unquote(urlsplit(self.path).path) or "/")
        if matched is None:
            return self._send(404, [("content-type", "application/json")], b'{"message":"Not Found"}')
        route, parameters = matched
        event = build_event(
            method=self.command,
            target=self.path,
            headers=list(self.headers.items()),
            body=body,
            route=route,
            path_parameters=parameters,
            source_ip=self.client_address[0],
            always_base64=self.gateway.always_base64,
        )
        try:
            status, headers, payload = http_response(self.gateway.invoke(route.function, event))
        except Exception:  # noqa: BLE001 - API Gateway answers 500 to any failed invocation
            log.exception("%s failed on %s %s", route.function, self.command, self.path)
            return self._send(
                500, [("content-type", "application/json")], b'{"message":"Internal Server Error"}'
            )
        return self._send(status, headers, payload)

    def _read_body(self) -> bytes | None:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            body = self._read_chunks()
            return body if len(body) <= self.gateway.max_body_bytes else None
        length = int(self.headers.get("Content-Length") or 0)
        if length > self.gateway.max_body_bytes:
            self.close_connection = True
            return None
        return self.rfile.read(length) if length else b""

    def _read_chunks(self) -> bytes:
        chunks = []
        while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
            chunks.append(self.rfile.read(size))
            self.rfile.readline()  # the CRLF closing each chunk
        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
            pass  # trailers, up to the blank line
        return b"".join(chunks)

    def _send(self, status: int, headers: list[tuple[str, str]], body: bytes) -> int:
        self.send_response(status)
        for name, value in headers:
            if name.lower() not in ("content-length", "transfer-encoding", "connection"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        return status

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        log.debug("gateway: " + format, *args)

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        pass  # dispatch logs one line per request, with the time taken


for _method in ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"):
    setattr(_GatewayHandler, f"do_{_method}", _GatewayHandler.dispatch)


def _handler_for(gateway: Gateway) -> type[BaseHTTPRequestHandler]:
    """The request handler class for one gateway (the HTTP server makes one instance per request)."""
    return type("Handler", (_GatewayHandler,), {"gateway": gateway})
