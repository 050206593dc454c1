"""The example server's HTTP front, in front of the SDK's app: auth, a record of requests, faults.

Every request is checked against the accepted credential first (401 for none or a wrong one, 403
for a forbidden one), before MCP or the control API sees it. Each request is recorded (its
JSON-RPC method, tool, idempotency key; never the credential). A ``tools/call`` hit by a fault is
run by the SDK as usual and its answer is then held back, delayed, cut off or replaced.
"""

from __future__ import annotations

import hmac
import json
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

import anyio

from lockgate_infra.mcp_example.faults import Fault, Faults
from lockgate_infra.serving import Activity

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]
Control = Callable[[str, str, bytes], tuple[int, Any]]  # (method, path, body) → (status, JSON)


class ServerCrashed(RuntimeError):  # noqa: N818 - names the event the fault stages
    """Raised by the crash fault after part of an answer: the server drops the connection."""


@dataclass(frozen=True)
class Auth:
    """Which values of ``header`` are accepted and which are known but forbidden (none accepted: open)."""

    header: str = "authorization"
    accepted: tuple[str, ...] = ()
    forbidden: tuple[str, ...] = ()

    def status(self, headers: dict[bytes, bytes]) -> int:
        """200, 401 (no or unknown credential) or 403 (a forbidden one)."""
        if not self.accepted:
            return 200
        given = headers.get(self.header.lower().encode(), b"")
        if any(hmac.compare_digest(given, value.encode()) for value in self.accepted):
            return 200
        if any(hmac.compare_digest(given, value.encode()) for value in self.forbidden):
            return 403
        return 401


@dataclass(frozen=True)
class Seen:
    """One request the server received (after auth, or refused by it)."""

    method: str  # the JSON-RPC method of a POST, else the HTTP method
    tool: str | None
    idempotency_key: str | None
    session: bool  # it carried an Mcp-Session-Id
    authorized: bool


class Front:
    """The ASGI app the example server runs: auth, the control API, then MCP with faults."""

    def __init__(
        self,
        app: App,
        *,
        auth: Auth,
        faults: Faults,
        seen: list[Seen],
        key_header: str,
        control: Control,
        activity: Activity,
        heard: Callable[[Seen], None] = lambda seen: None,
    ) -> None:
        self._app, self._auth, self._faults, self._seen = app, auth, faults, seen
        self._key_header, self._control, self._activity = key_header.lower().encode(), control, activity
        self._heard = heard  # each authorised MCP request, once recorded

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)  # lifespan: starts the SDK's session manager
            return
        self._activity.count()
        headers = dict(scope["headers"])
        status = self._auth.status(headers)
        if status != 200:
            self._seen.append(Seen(scope["method"], None, None, b"mcp-session-id" in headers, False))
            challenge = [(b"www-authenticate", b'Bearer error="invalid_token"')] if status == 401 else []
            await _reply(
                send, status, {"error": "invalid_token" if status == 401 else "forbidden"}, challenge
            )
            return
        if scope["path"].startswith("/_example/"):
            answer = self._control(scope["method"], scope["path"], await _body(receive))
            await _reply(send, *answer)
            return
        if scope["method"] != "POST":
            self._seen.append(Seen(scope["method"], None, None, b"mcp-session-id" in headers, True))
            await self._app(scope, receive, send)
            return
        await self._post(scope, headers, await _body(receive), receive, send)

    async def _post(
        self, scope: Scope, headers: dict[bytes, bytes], body: bytes, receive: Receive, send: Send
    ) -> None:
        method, tool, request_id = _read(body)
        key = headers.get(self._key_header)
        has_session = b"mcp-session-id" in headers
        seen = Seen(method, tool, key.decode() if key else None, has_session, True)
        self._seen.append(seen)
        self._heard(seen)
        receive = _replaying(body, receive)
        if method != "tools/call":
            await self._app(scope, receive, send)
            return
        if has_session and self._faults.take("lose_session", tool):
            unknown = secrets.token_hex(16).encode()
            scope = {
                **scope,
                "headers": [(k, unknown if k == b"mcp-session-id" else v) for k, v in scope["headers"]],
            }
        fault = self._faults.take("crash", tool) or self._faults.take("malformed", tool)
        fault = fault or self._faults.take("slow", tool)
        if fault is None:
            await self._app(scope, receive, send)
            return
        await _faulty(self._app, fault, request_id, scope, receive, send)


async def _faulty(
    app: App, fault: Fault, request_id: Any, scope: Scope, receive: Receive, send: Send
) -> None:
    """Run the call, then answer as ``fault`` says."""
    if fault.kind == "slow" and fault.before_acting:
        await anyio.sleep(fault.seconds)
        await app(scope, receive, send)
        return
    held: list[Message] = []

    async def hold(message: Message) -> None:
        held.append(message)

    await app(scope, receive, hold)  # the tool has acted once this returns
    if fault.kind == "slow":
        await anyio.sleep(fault.seconds)
        for message in held:
            await send(message)
    elif fault.kind == "malformed":
        await _reply(send, *_malformed(fault, request_id))
    else:
        start = next(m for m in held if m["type"] == "http.response.start")
        body = b"".join(m.get("body", b"") for m in held if m["type"] == "http.response.body")
        kept = [(k, v) for k, v in start.get("headers", []) if k.lower() == b"content-type"]
        length = [(b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": kept + length})
        await send({"type": "http.response.body", "body": body[: len(body) // 2], "more_body": True})
        raise ServerCrashed("fault: crashed after acting, before answering")


def _malformed(fault: Fault, request_id: Any) -> tuple[int, Any, list[tuple[bytes, bytes]]]:
    if fault.malformed == "bad_result":
        return 200, {"jsonrpc": "2.0", "id": request_id, "result": {"content": "not a list"}}, []
    if fault.malformed == "html":
        return (
            200,
            b"<html><body>Service temporarily unavailable</body></html>",
            [(b"content-type", b"text/html")],
        )
    return 200, b"this is not JSON", []


async def _reply(
    send: Send, status: int, payload: Any, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    extra = list(headers or [])
    names = {name for name, _ in extra}
    base = [] if b"content-type" in names else [(b"content-type", b"application/json")]
    all_headers = [*base, *extra, (b"content-length", str(len(data)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": all_headers})
    await send({"type": "http.response.body", "body": data})


async def _body(receive: Receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


def _replaying(body: bytes, receive: Receive) -> Receive:
    """A receive that gives the app the body already read, then waits on the real one (disconnects)."""
    given = False

    async def replay() -> Message:
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def _read(body: bytes) -> tuple[str, str | None, Any]:
    """A POST's JSON-RPC method, the tool it calls, and its request id."""
    try:
        message = json.loads(body)
    except ValueError:
        return "POST", None, None
    if not isinstance(message, dict):
        return "POST", None, None
    params = message.get("params")
    name = params.get("name") if isinstance(params, dict) else None
    tool = name if isinstance(name, str) else None
    return str(message.get("method", "response")), tool, message.get("id")
