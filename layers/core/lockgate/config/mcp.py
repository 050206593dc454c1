"""``[mcp.servers.NAME]``: the MCP servers a deployment's workflows call, and what each tool may do.

A server's section says where it is and how to reach it: its URL, the credential (a secret
reference, never the value), timeouts and size limits, the protocol version it was pinned with,
and where the operation ledger's key goes (a header, or an argument). Its ``tools`` tables decide
each tool's risk: the server's own annotations (``destructiveHint``, ...) are hints, never policy.
A tool a task lists that has no table here stops the worker at start: there is no default risk.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lockgate.config.files import no_unknown, positive_int, table
from lockgate.config.sources import SECRET_PREFIXES
from lockgate.errors import ConfigError

RISKS = ("read", "act", "approval", "refused")
SERVER_NAME = re.compile(r"^[a-z][a-z0-9_]{0,30}$")  # part of each tool's name for the model
HEADER = re.compile(r"^[A-Za-z0-9-]{1,64}$")
ENV_URL = re.compile(r"^env:[A-Za-z_][A-Za-z0-9_]*$")
_TIMEOUTS = ("connect_timeout_seconds", "read_timeout_seconds")
_SERVER_TEXTS = ("auth_header", "protocol", "idempotency_header", "idempotency_argument")
_TOOL_TEXTS = ("summary", "target", "reconcile_tool", "reconcile_argument")


@dataclass(frozen=True)
class McpToolConfig:
    """``[mcp.servers.NAME.tools.TOOL]``: what one of the server's tools may do here."""

    # read: runs directly; act: once through the ledger, a person if the run is tainted;
    # approval: always a person; refused: never offered to the model
    risk: str
    # what a person reads, built from the arguments: "close ticket {ticket_id}" (default: the call)
    summary: str = ""
    target: str = ""  # the argument "one pending proposal per target" counts on (default: none)
    editable: tuple[str, ...] = ()  # arguments a reviewer may change before approving
    identity: tuple[str, ...] = ()  # arguments that make its business identity: one effect per value, ever
    safe_to_retry: bool = False  # a call with no answer is sent once more under the same key (not UNKNOWN)
    reconcile_tool: str = ""  # a read tool of the server asked what a call with a key did (else a person)
    reconcile_argument: str = "idempotency_key"  # the reconcile tool's argument that takes the key
    needs_person_when_tainted: bool = True  # for act: after the run read untrusted content, ask a person


@dataclass(frozen=True)
class McpServerConfig:
    """``[mcp.servers.NAME]``: one MCP server, reached over streamable HTTP."""

    url: str  # https://..., or "env:NAME": the address is in that variable of the function's environment
    credential: str = ""  # a secret reference ("secretsmanager:NAME", "env:NAME") for its token; "": none
    auth_header: str = "Authorization"  # Authorization sends "Bearer <token>"; another header sends it as is
    protocol: str = "2026-07-28"  # the MCP protocol version to speak (2026-07-28, or 2025-11-25 and older)
    connect_timeout_seconds: float = 5.0  # to reach the server: none in time, nothing was sent
    read_timeout_seconds: float = 30.0  # a call with no answer by then: a write's outcome is unknown
    max_result_bytes: int = 100_000  # a result beyond this reaches the model cut, with a note saying so
    idempotency_header: str = "Idempotency-Key"  # the header each write's ledger key goes in; "": none
    # an argument of the server's tools that takes the ledger key instead: hidden from the model,
    # filled by Lockgate on every write ("": none)
    idempotency_argument: str = ""
    tools: Mapping[str, McpToolConfig] = field(default_factory=dict)

    def reconcile_tools(self) -> set[str]:
        """The read tools its write tools' unknown outcomes are settled with."""
        return {t.reconcile_tool for t in self.tools.values() if t.reconcile_tool}

    def pinned_tools(self) -> list[str]:
        """The tools a pin file holds: every tool with a table, but those refused."""
        return sorted(name for name, tool in self.tools.items() if tool.risk != "refused")


def parse_mcp(body: Mapping[str, Any], origin: str) -> dict[str, McpServerConfig]:
    """``[mcp]``, validated: ConfigError names the server, the key and what it should be."""
    no_unknown(body, {"servers"}, f"{origin}: [mcp]")
    servers = {}
    for name, raw in table(body.get("servers", {}), f"{origin}: [mcp.servers]").items():
        where = f"{origin}: [mcp.servers.{name}]"
        if not SERVER_NAME.match(name):
            raise ConfigError(f"{where}: a server's name is lower-case letters, digits and _, at most 31")
        servers[name] = _server(table(raw, where), where)
    return servers


def _server(entry: Mapping[str, Any], where: str) -> McpServerConfig:
    no_unknown(entry, set(McpServerConfig.__dataclass_fields__), where)
    url = entry.get("url")
    if not isinstance(url, str) or not (re.match(r"^https?://[^\s@]+$", url) or ENV_URL.match(url)):
        raise ConfigError(
            f"{where}: url is the server's https:// address (no user or password in it), or "
            '"env:NAME" for one the function\'s environment gives'
        )
    credential = _text(entry, "credential", where)
    if credential and not credential.startswith(SECRET_PREFIXES):
        raise ConfigError(f"{where}: credential is a secret reference (secretsmanager:NAME or env:NAME)")
    for key in ("auth_header", "idempotency_header"):
        value = _text(entry, key, where)
        if value and not HEADER.match(value):
            raise ConfigError(f"{where}: {key} is a header name (letters, digits and -)")
    timeouts: dict[str, Any] = {k: _seconds(entry[k], f"{where}.{k}") for k in _TIMEOUTS if k in entry}
    tools = {
        name: _tool(table(raw, f"{where}.tools.{name}"), f"{where}.tools.{name}")
        for name, raw in table(entry.get("tools", {}), f"{where}.tools").items()
    }
    kept: dict[str, Any] = {k: _text(entry, k, where) for k in _SERVER_TEXTS if k in entry}
    if "max_result_bytes" in entry:
        kept["max_result_bytes"] = positive_int(entry["max_result_bytes"], f"{where}.max_result_bytes")
    for name, tool in tools.items():
        read = tools.get(tool.reconcile_tool)
        if tool.reconcile_tool and (read is None or read.risk != "read"):
            raise ConfigError(
                f"{where}.tools.{name}.reconcile_tool: {tool.reconcile_tool!r} is not one of this "
                'server\'s tools with risk = "read"'
            )
    return McpServerConfig(url=url, credential=credential, tools=tools, **timeouts, **kept)


def _tool(entry: Mapping[str, Any], where: str) -> McpToolConfig:
    no_unknown(entry, set(McpToolConfig.__dataclass_fields__), where)
    risk = entry.get("risk")
    if risk not in RISKS:
        raise ConfigError(f"{where}: risk is one of {', '.join(RISKS)} (the server's own hints are not used)")
    lists: dict[str, Any] = {}
    for key in ("editable", "identity"):
        value = entry.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise ConfigError(f"{where}.{key} is a list of argument names")
        lists[key] = tuple(value)
    flags: dict[str, Any] = {}
    for key in ("safe_to_retry", "needs_person_when_tainted"):
        if key in entry:
            if not isinstance(entry[key], bool):
                raise ConfigError(f"{where}.{key} is true or false")
            flags[key] = entry[key]
    texts: dict[str, Any] = {k: _text(entry, k, where) for k in _TOOL_TEXTS if k in entry}
    return McpToolConfig(risk=str(risk), **lists, **flags, **texts)


def _text(entry: Mapping[str, Any], key: str, where: str) -> str:
    value = entry.get(key, "")
    if not isinstance(value, str):
        raise ConfigError(f"{where}.{key} is text")
    return value


def _seconds(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 600:
        raise ConfigError(f"{where} is a number of seconds, more than 0 and at most 600")
    return float(value)
