"""The example MCP server on loopback and clients of it: the real SDK on both sides, no mocks."""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from typing import Any

import pytest

from lockgate.mcp.client import McpClient
from lockgate.mcp.servers import Credential, ServerSettings
from lockgate_infra.mcp_example import EXAMPLE_TOKEN, McpExample

ERAS = ["2026-07-28", "2025-11-25"]  # sessionless, and the handshake era's sessions


@pytest.fixture(scope="session")
def tls() -> ssl.SSLContext:
    """One TLS context for every client (making one costs 30-110 ms)."""
    from lockgate.mcp.session import ssl_context

    return ssl_context()


@pytest.fixture(scope="module")
def shared_server() -> Iterator[McpExample]:
    with McpExample() as server:
        yield server


@pytest.fixture
def server(shared_server: McpExample) -> McpExample:
    """The module's example server, as new: sample tickets, nothing done, no faults."""
    shared_server.reset()
    return shared_server


@pytest.fixture
def own_server() -> Iterator[McpExample]:
    """A server of the test's own, for faults that stop it."""
    with McpExample() as server:
        yield server


def settings(server: McpExample, **overrides: Any) -> ServerSettings:
    """Settings for ``server`` with its token; ``overrides`` replace any field."""
    fields: dict[str, Any] = {
        "name": "tickets",
        "url": server.url,
        "credential": Credential.bearer(EXAMPLE_TOKEN),
        # A live loopback server connects at once or refuses at once; the margin is for a loaded CI
        # machine (coverage, two workers), where 2 s once ran out during a pinning's tools/list.
        "connect_timeout": 10.0,
        "read_timeout": 5.0,
        **overrides,
    }
    return ServerSettings(**fields)


def client(server: McpExample, tls: ssl.SSLContext, **overrides: Any) -> McpClient:
    """A client of ``server`` (see ``settings``)."""
    return McpClient(settings(server, **overrides), ssl_context=tls)
