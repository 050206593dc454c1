"""One failed MCP operation → one typed failure, from what the transport saw (never from message text).

The deciding question for a call is whether its ``tools/call`` request left: if not, nothing ran
(``McpNotSent``, or ``McpRefused`` when the server turned our credentials away). If it left, the
answer decides: none (``McpOutcomeUnknown``), a definite rejection, a JSON-RPC error, or something
that is not a valid result (``McpProtocolError``, which says whether the tool may have run).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lockgate.mcp.failures import (
    McpFailure,
    McpNotSent,
    McpOutcomeUnknown,
    McpProtocolError,
    McpRefused,
    McpResultTooLarge,
)
from lockgate.mcp.untrusted import one_line

if TYPE_CHECKING:
    from lockgate.mcp.transport import Exchange, Probe

# JSON-RPC error codes (mcp_types.jsonrpc) with which a server rejects a request before running it.
REJECTED_BEFORE_RUNNING = {
    -32700: "the server could not parse the request",
    -32600: "the server found the request invalid",
    -32601: "the server does not know the method",
    -32602: "the server refused the arguments",
    -32020: "the request's headers did not match its body",
    -32022: "the server does not support the protocol version",
}
CONNECTION_CLOSED, REQUEST_TIMEOUT = -32000, -32001  # made by the SDK: the answer never came
TURNED_AWAY = {404: "the server no longer knows the session", 429: "the server asked us to slow down"}


def classify(error: BaseException, probe: Probe, *, server: str, tool: str | None, limit: int) -> McpFailure:
    """The failure an operation ended with, given the SDK's exception and the transport's record."""
    for exchange in probe.exchanges:
        if exchange.status in (401, 403):
            return McpRefused(
                f"MCP server {server!r} refused {'the credentials' if exchange.status == 401 else 'access'} "
                f"(HTTP {exchange.status}): check its secret and what the token may do",
                server=server,
                tool=tool,
                status=exchange.status,
            )
    if probe.oversized:
        return McpResultTooLarge(
            f"MCP server {server!r} answered with more than {limit} bytes: the answer was not read",
            server=server,
            tool=tool,
            limit=limit,
        )
    deciding = _deciding(probe, tool)
    what = f"the call to {tool!r}" if tool else "the request"
    if deciding is None or not deciding.bytes_sent:
        cause = _cause(probe)
        return McpNotSent(f"{what} was not sent to MCP server {server!r}: {cause}", server=server, tool=tool)
    return _after_sending(deciding, error, server=server, tool=tool, what=what)


def _deciding(probe: Probe, tool: str | None) -> Exchange | None:
    """The call's own exchange; for a listing, the last request that expected an answer."""
    if tool is not None:
        return probe.last("tools/call")
    answered = [e for e in probe.exchanges if e.method not in ("GET", "DELETE", "response")]
    return answered[-1] if answered else None


def _cause(probe: Probe) -> str:
    failed = next((e for e in reversed(probe.exchanges) if e.failure or (e.status or 0) >= 400), None)
    if failed is None:
        return "the connection was not made"
    if failed.error:
        return f"{failed.method} failed before it was sent ({failed.error})"
    return f"{failed.method} was answered with HTTP {failed.status}"


def _after_sending(
    exchange: Exchange, error: BaseException, *, server: str, tool: str | None, what: str
) -> McpFailure:
    if exchange.failure is not None:
        return McpOutcomeUnknown(
            f"{what} was sent to MCP server {server!r} and no answer came ({exchange.error})",
            server=server,
            tool=tool,
        )
    if exchange.status in TURNED_AWAY:
        reason = TURNED_AWAY[exchange.status]
        return McpNotSent(
            f"MCP server {server!r} turned {what} away unread (HTTP {exchange.status}: {reason})",
            server=server,
            tool=tool,
        )
    if exchange.answer == "error":
        return _rpc_error(exchange.error_code, server=server, tool=tool, what=what, text=str(error))
    status = exchange.status
    if status is None or (status < 300 and exchange.reading and exchange.answer is None):  # cut off
        return McpOutcomeUnknown(
            f"{what} was sent to MCP server {server!r} and no answer came in time", server=server, tool=tool
        )
    if status >= 500:
        return McpOutcomeUnknown(
            f"MCP server {server!r} failed while answering {what} (HTTP {status})", server=server, tool=tool
        )
    if status >= 300:
        why = (
            "redirected it elsewhere (not followed: configure the URL it names)"
            if status < 400
            else "rejected it"
        )
        return McpProtocolError(f"MCP server {server!r} {why} (HTTP {status})", server=server, tool=tool)
    if getattr(error, "code", None) in (CONNECTION_CLOSED, REQUEST_TIMEOUT):
        return McpOutcomeUnknown(
            f"{what} was sent to MCP server {server!r} and no answer came", server=server, tool=tool
        )
    return McpProtocolError(
        f"MCP server {server!r} answered {what} with something that is not a valid result "
        f"({type(error).__name__})",
        server=server,
        tool=tool,
        may_have_acted=tool is not None,
    )


def _rpc_error(code: int | None, *, server: str, tool: str | None, what: str, text: str) -> McpProtocolError:
    before = REJECTED_BEFORE_RUNNING.get(code) if code is not None else None
    reason = before or "the server reported an error"
    return McpProtocolError(
        f"MCP server {server!r} answered {what} with JSON-RPC error {code} ({reason}): "
        f"{one_line(text, 200)!r}",
        server=server,
        tool=tool,
        code=code,
        may_have_acted=before is None and tool is not None,
    )
