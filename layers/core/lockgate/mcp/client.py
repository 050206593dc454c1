"""A synchronous client for one MCP server over streamable HTTP, the ``mcp`` SDK's client underneath.

Each operation opens its own connection in its own event loop (``asyncio.run``) and closes it:
a Lambda worker's records run in threads, and an SDK session cannot outlive its event loop.
Importing this module costs nothing: the SDK (about 0.8 s to import) loads on the first operation,
so a worker whose workflows call no MCP server never pays for it.

Every failure is one of ``lockgate.mcp.failures``' types. The credential goes into one request
header and nowhere else: not into a message, a repr, a log line or a trace.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable, Coroutine, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from lockgate.mcp.definitions import ToolDefinition
from lockgate.mcp.failures import McpFailure, McpToolError
from lockgate.mcp.results import ToolResult
from lockgate.mcp.servers import ServerSettings, check_header_name

if TYPE_CHECKING:
    from lockgate.mcp.definitions import Listing
    from lockgate.mcp.session import Connection

T = TypeVar("T")


class McpClient:
    """Lists and calls one server's tools; each method is one connection, synchronous."""

    def __init__(self, settings: ServerSettings, *, ssl_context: ssl.SSLContext | None = None) -> None:
        # Building an SSL context costs 30-110 ms: one per client (share one by passing it).
        self.settings = settings
        self._ssl_context = ssl_context

    def list_tools(self) -> Listing:
        """Every tool the server lists now (all pages, no cache), with the negotiated protocol version."""
        from lockgate.mcp import session

        connection = self._connection({})
        return self._run(lambda: session.list_tools(connection), connection, tool=None)

    def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any],
        *,
        idempotency_key: str | None = None,
        key_header: str | None = "Idempotency-Key",
        pinned: ToolDefinition | None = None,
    ) -> ToolResult:
        """Call ``name`` once; McpToolError if the tool reports an error, another McpFailure if no result.

        The tools are listed first on the same connection (the SDK checks results against the listed
        output schema and would otherwise list after the call). With ``pinned``, a live definition that
        differs raises McpDefinitionChanged before anything is sent. ``idempotency_key`` goes in the
        ``key_header`` header of the ``tools/call`` request only.
        """
        from lockgate.mcp import session

        headers = {}
        if idempotency_key is not None and key_header is not None:
            check_header_name(key_header, "the idempotency key header")
            if not (
                idempotency_key.isascii() and idempotency_key.isprintable() and len(idempotency_key) <= 255
            ):
                raise ValueError("an idempotency key must be printable ASCII, at most 255 characters")
            headers[key_header] = idempotency_key
        connection = self._connection(headers)
        result = self._run(
            lambda: session.call_tool(connection, name, dict(arguments), pinned), connection, tool=name
        )
        if result.is_error:
            raise McpToolError(
                f"the tool {name!r} on MCP server {self.settings.name!r} reported an error",
                server=self.settings.name,
                tool=name,
                result=result,
            )
        return result

    def _connection(self, call_headers: Mapping[str, str]) -> Connection:
        from lockgate.mcp.session import Connection, ssl_context

        if self._ssl_context is None:
            self._ssl_context = ssl_context()
        return Connection(self.settings, self._ssl_context, call_headers)

    def _run(
        self, operation: Callable[[], Coroutine[Any, Any, T]], connection: Connection, tool: str | None
    ) -> T:
        from lockgate.mcp.outcomes import classify

        if _loop_running():
            raise RuntimeError("McpClient is synchronous: call it from a thread with no running event loop")
        try:
            return asyncio.run(operation())
        except Exception as exc:  # noqa: BLE001 - every failure becomes one of the typed ones below
            root = _root(exc)
            if isinstance(root, McpFailure):
                raise root from None
            limit = self.settings.max_response_bytes
            raise classify(
                root, connection.probe, server=self.settings.name, tool=tool, limit=limit
            ) from root


def _root(exc: BaseException) -> BaseException:
    """The exception inside the SDK's exception groups: one of ours if any, else the first."""
    while isinstance(exc, BaseExceptionGroup):
        ours = next((e for e in exc.exceptions if isinstance(_root(e), McpFailure)), None)
        exc = ours if ours is not None else exc.exceptions[0]
    return exc


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True
