"""What ``lockgate check`` says about ``[mcp.servers]``: tools nobody pinned, sections nothing uses.

What stops a worker at start (a tool a task asks for with no table, a server lockgate.toml lacks,
a missing or damaged pin file) stops the dry registration too, as one line; these are the rest:
a tool that would fail on its first call (a finding), and a section that would sit unused (a
warning: harmless, as a source no task reads is).
"""

from __future__ import annotations

from collections.abc import Mapping

from lockgate.config.mcp import McpServerConfig
from lockgate.errors import ConfigError
from lockgate.mcp.pins import pin_command
from lockgate.workflows import pin_path, read_pins


def mcp_findings(servers: Mapping[str, McpServerConfig], users: Mapping[str, set[str]]) -> list[str]:
    """One line per finding: a configured tool the pins of a workflow using its server lack."""
    findings = []
    for name, server in servers.items():
        where = f"lockgate.toml [mcp.servers.{name}]"
        for workflow in sorted(users.get(name, ())):
            try:
                pinned = read_pins(pin_path(workflow, name), name, workflow).tools
            except ConfigError as exc:  # the registration read it moments ago: changed since
                findings.append(f"{where}: {exc}")
                continue
            unpinned = [tool for tool in server.pinned_tools() if tool not in pinned]
            if unpinned:
                findings.append(
                    f"{where}: {', '.join(unpinned)} not in workflow {workflow}'s pins: "
                    f"{pin_command(name, workflow)}"
                )
    return findings


def unused_servers(servers: Mapping[str, McpServerConfig], users: Mapping[str, set[str]]) -> list[str]:
    """One warning per ``[mcp.servers]`` section no registered workflow calls ``setup.mcp`` for."""
    return [
        f"warning: lockgate.toml [mcp.servers.{name}]: no workflow calls setup.mcp({name!r}): "
        "remove the section or use it"
        for name in servers
        if not users.get(name)
    ]
