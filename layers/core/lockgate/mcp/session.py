"""One connection to an MCP server through the SDK, for one operation: list the tools, or list and call.

This is the only module that imports the ``mcp`` SDK; ``lockgate.mcp.client`` imports it when an
operation runs. The SDK's ``Client`` is used with its response cache off and its protocol version
pinned, and calls go through ``client.session.call_tool``: the high-level ``Client.call_tool``
sends a call again by itself (an ``InputRequiredResult``, a header mismatch), which a ledger
operation must never do.
"""

from __future__ import annotations

import importlib.metadata
import ssl
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import Implementation

from lockgate.mcp.definitions import DefinitionRejected, Listing, ToolDefinition
from lockgate.mcp.failures import McpDefinitionChanged, McpProtocolError
from lockgate.mcp.results import ToolResult, tool_result
from lockgate.mcp.servers import HANDSHAKE_PROTOCOLS, ServerSettings
from lockgate.mcp.transport import Probe, RecordingTransport
from lockgate.mcp.untrusted import one_line

MAX_PAGES = 100  # of tools/list: a server that pages forever is refused, not followed


def ssl_context() -> ssl.SSLContext:
    """A TLS context as httpx2 builds one (the system's trust store): slow to make, so made once."""
    return httpx2.create_ssl_context()


def sdk_version() -> str:
    """``mcp`` and the installed SDK's version, e.g. ``mcp 2.3.0``."""
    return f"mcp {importlib.metadata.version('mcp')}"


@dataclass(frozen=True)
class Connection:
    """What one operation needs; ``probe`` records its HTTP exchanges for classifying a failure."""

    settings: ServerSettings
    ssl_context: ssl.SSLContext
    call_headers: Mapping[str, str]
    probe: Probe = field(default_factory=Probe)


@asynccontextmanager
async def connected(connection: Connection) -> AsyncIterator[Client]:
    """An SDK client on our HTTP transport, its protocol version pinned and its cache off."""
    settings = connection.settings
    transport = RecordingTransport(
        connection.probe,
        ssl_context=connection.ssl_context,
        max_response_bytes=settings.max_response_bytes,
        call_headers=connection.call_headers,
    )
    credential = settings.credential
    http = httpx2.AsyncClient(
        transport=transport,
        headers={credential.header: credential.value} if credential else None,
        timeout=httpx2.Timeout(
            settings.read_timeout, connect=settings.connect_timeout, pool=settings.connect_timeout
        ),
        follow_redirects=False,  # a redirect could carry the credential elsewhere
        trust_env=False,  # no proxy or .netrc credentials from the environment
    )
    mode = "legacy" if settings.protocol in HANDSHAKE_PROTOCOLS else settings.protocol
    stream = streamable_http_client(
        settings.url, http_client=http, max_sse_event_size=settings.max_response_bytes
    )
    async with (
        http,
        Client(
            stream,
            mode=mode,
            read_timeout_seconds=settings.read_timeout,
            cache=None,
            client_info=Implementation(name="lockgate", version=_lockgate_version()),
        ) as client,
    ):
        if settings.protocol not in ("auto", client.protocol_version):
            raise McpProtocolError(
                f"MCP server {settings.name!r} speaks protocol {one_line(client.protocol_version, 40)!r}, "
                f"pinned {settings.protocol!r}: re-pin it after review",
                server=settings.name,
            )
        yield client


async def list_tools(connection: Connection) -> Listing:
    """Every tool listed, all pages, checked one by one (a tool Lockgate cannot hold is rejected)."""
    async with connected(connection) as client:
        listed = await _all_tools(client, connection.settings.name)
        version = client.protocol_version
    return _listing(connection.settings, listed, version)


async def call_tool(
    connection: Connection, name: str, arguments: dict[str, Any], pinned: ToolDefinition | None
) -> ToolResult:
    """List (and with ``pinned``, compare before sending), then send ``tools/call`` exactly once."""
    settings = connection.settings
    answered: Any = None
    try:
        async with connected(connection) as client:
            listed = await _all_tools(client, settings.name)
            if pinned is not None:
                _check_pinned(_listing(settings, listed, client.protocol_version), name, pinned)
            answered = await client.session.call_tool(
                name, arguments, read_timeout_seconds=settings.read_timeout
            )
    except Exception:
        if answered is None:
            raise
        # The call was answered and its result read: closing the connection afterwards changes nothing.
    wire = answered.model_dump(mode="json", by_alias=True, exclude_none=True)
    return tool_result(settings.name, name, wire, settings.max_result_bytes)


async def _all_tools(client: Client, server: str) -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = []
    cursor: str | None = None
    seen: set[str] = set()
    for _ in range(MAX_PAGES):
        page = await client.list_tools(cursor=cursor, cache_mode="bypass")
        tools += [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in page.tools]
        cursor = page.next_cursor
        if cursor is None:
            return tools
        if cursor in seen:
            raise McpProtocolError(f"MCP server {server!r} lists its tools in a loop", server=server)
        seen.add(cursor)
    raise McpProtocolError(f"MCP server {server!r} lists more than {MAX_PAGES} pages of tools", server=server)


def _listing(settings: ServerSettings, listed: list[dict[str, Any]], version: str) -> Listing:
    tools: dict[str, ToolDefinition] = {}
    rejected: dict[str, str] = {}
    for wire in listed:
        shown = one_line(str(wire.get("name", "")), 128)
        try:
            definition = ToolDefinition.from_wire(wire)
        except DefinitionRejected as exc:
            rejected[shown] = str(exc)
            continue
        if definition.name in tools or shown in rejected:
            rejected[shown] = "the server lists two tools with this name"
            tools.pop(definition.name, None)
            continue
        tools[definition.name] = definition
    return Listing(settings.name, settings.shown_url, version, sdk_version(), tools, rejected)


def _check_pinned(listing: Listing, name: str, pinned: ToolDefinition) -> None:
    from lockgate.mcp.pins import drift_of

    changes = drift_of(listing, name, pinned)
    if changes:
        raise McpDefinitionChanged(
            f"the tool {name!r} on MCP server {listing.server!r} changed since it was pinned: "
            f"{'; '.join(changes)}. Nothing was sent; re-pin it after reviewing the change",
            server=listing.server,
            tool=name,
            changes=changes,
        )


def _lockgate_version() -> str:
    try:
        return importlib.metadata.version("lockgate")
    except importlib.metadata.PackageNotFoundError:  # the Lambda layer carries no dist-info
        return "unknown"
