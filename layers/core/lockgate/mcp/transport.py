"""The HTTP layer under the MCP SDK: it records what each request did, so a failure can be classified.

The SDK turns most HTTP outcomes into one ``MCPError`` and drops the status, and a transport error
ends its whole session. This wrapper, handed to the SDK inside an ``httpx2.AsyncClient``:

- records, per request, its JSON-RPC method, its status, whether any of its bytes left (the
  request body stream was asked for its first chunk: the headers are on the wire by then), and
  whether the answer was a JSON-RPC result or error;
- turns a transport error into an error response for that request alone (so the session lives
  and the failure reaches the caller as that request's error), noting "not sent" or "unknown";
- adds per-call headers (an idempotency key) to ``tools/call`` requests only;
- stops reading an answer past ``max_response_bytes`` (an ``httpx2.StreamError``: the SDK then
  fails that request only; any other exception type would end the session).

Imported only by ``lockgate.mcp.session``, itself imported only when an MCP server is called.
"""

from __future__ import annotations

import json
import ssl
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field

import httpx2

NOT_SENT, UNKNOWN = "not_sent", "unknown"
_BEFORE_SENDING = (httpx2.ConnectError, httpx2.ConnectTimeout, httpx2.PoolTimeout)


@dataclass
class Exchange:
    """One HTTP request as the transport saw it."""

    method: str  # the JSON-RPC method of a POST ("tools/call"), else the HTTP method
    bytes_sent: bool = False
    status: int | None = None
    failure: str | None = None  # NOT_SENT or UNKNOWN when the transport failed
    error: str | None = None  # the transport error's type name
    reading: bool = False  # the answer's body began to be read
    answer: str | None = None  # "result", "error" or "malformed", once the whole body was read
    error_code: int | None = None  # the JSON-RPC error code of an "error" answer


@dataclass
class Probe:
    """Every exchange of one operation, in order, and whether an answer was too large."""

    exchanges: list[Exchange] = field(default_factory=list)
    oversized: bool = False

    def last(self, method: str) -> Exchange | None:
        """The latest exchange for ``method``."""
        return next((e for e in reversed(self.exchanges) if e.method == method), None)


class ResponseTooLarge(httpx2.StreamError):
    """An answer over the limit: a StreamError, so the SDK fails that one request."""


class AnswerLost(httpx2.StreamError):
    """The connection failed while the answer was being read: sent, outcome unknown."""


class _Watched(httpx2.AsyncByteStream):
    """A request body that notes when the connection first asks for it (headers sent by then)."""

    def __init__(self, inner: httpx2.AsyncByteStream, exchange: Exchange) -> None:
        self._inner, self._exchange = inner, exchange

    async def __aiter__(self) -> AsyncIterator[bytes]:
        self._exchange.bytes_sent = True
        async for chunk in self._inner:
            yield chunk


class _Capped(httpx2.AsyncByteStream):
    """A response body read up to a limit, kept to learn whether it held a result or an error."""

    def __init__(self, inner: httpx2.AsyncByteStream, limit: int, probe: Probe, exchange: Exchange) -> None:
        self._inner, self._limit, self._probe, self._exchange = inner, limit, probe, exchange
        self._body = bytearray()

    async def __aiter__(self) -> AsyncIterator[bytes]:
        self._exchange.reading = True
        try:
            async for chunk in self._inner:
                self._body += chunk
                if len(self._body) > self._limit:
                    self._probe.oversized = True
                    raise ResponseTooLarge(f"answer over {self._limit} bytes")
                yield chunk
        except httpx2.TransportError as exc:
            self._exchange.failure, self._exchange.error = UNKNOWN, type(exc).__name__
            raise AnswerLost(type(exc).__name__) from exc
        self._exchange.answer, self._exchange.error_code = answer_kind(bytes(self._body))

    async def aclose(self) -> None:
        await self._inner.aclose()


class RecordingTransport(httpx2.AsyncBaseTransport):
    """An ``httpx2`` transport that records each exchange in ``probe`` (see the module's notes)."""

    def __init__(
        self,
        probe: Probe,
        *,
        ssl_context: ssl.SSLContext,
        max_response_bytes: int,
        call_headers: Mapping[str, str] | None = None,
    ) -> None:
        self._inner = httpx2.AsyncHTTPTransport(verify=ssl_context, retries=0)
        self._probe, self._max = probe, max_response_bytes
        self._call_headers = dict(call_headers or {})

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        """Send ``request`` through the real transport, recording what happened."""
        exchange = Exchange(_method(request))
        self._probe.exchanges.append(exchange)
        if exchange.method == "tools/call":
            request.headers.update(self._call_headers)
        request.stream = _Watched(request.stream, exchange)  # type: ignore[arg-type]
        try:
            response = await self._inner.handle_async_request(request)
        except httpx2.TransportError as exc:
            sent = exchange.bytes_sent and not isinstance(exc, _BEFORE_SENDING)
            exchange.failure, exchange.error = (UNKNOWN if sent else NOT_SENT), type(exc).__name__
            status = 504 if isinstance(exc, httpx2.TimeoutException) else 502
            return httpx2.Response(status, headers={"content-type": "text/plain"}, request=request)
        exchange.status = response.status_code
        if request.method != "POST":
            return response  # the legacy era's standing GET stream: no answer of ours comes on it
        response.stream = _Capped(response.stream, self._max, self._probe, exchange)  # type: ignore[arg-type]
        return response

    async def aclose(self) -> None:
        """Close the real transport's connections."""
        await self._inner.aclose()


def _method(request: httpx2.Request) -> str:
    if request.method != "POST":
        return request.method
    try:
        message = json.loads(request.content)
    except ValueError:
        return "POST"
    method = message.get("method") if isinstance(message, dict) else None
    return method if isinstance(method, str) else "response"


def answer_kind(body: bytes) -> tuple[str, int | None]:
    """Whether a body (JSON, or server-sent events) carries a JSON-RPC result, an error, or neither."""
    text = body.decode("utf-8", "replace")
    stripped = text.lstrip()
    candidates = [stripped] if stripped.startswith("{") else _sse_data(text)
    for candidate in candidates:
        try:
            message = json.loads(candidate)
        except ValueError:
            continue
        if not isinstance(message, dict) or "id" not in message:
            continue
        if isinstance(message.get("error"), dict):
            code = message["error"].get("code")
            return "error", code if isinstance(code, int) else None
        if "result" in message:
            return "result", None
    return "malformed", None


def _sse_data(text: str) -> list[str]:
    """The data of each server-sent event, its ``data:`` lines joined."""
    events, lines = [], []
    for line in [*text.splitlines(), ""]:
        if line.startswith("data:"):
            lines.append(line[5:].removeprefix(" "))
        elif not line and lines:
            events.append("\n".join(lines))
            lines = []
    return events
