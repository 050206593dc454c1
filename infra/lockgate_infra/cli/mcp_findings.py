"""What ``lockgate check`` says about ``[mcp.servers]``: sections nothing uses, tools nobody pinned.

What stops a worker at start (a tool a task asks for with no table, a server lockgate.toml lacks,
a missing or damaged pin file) stops the dry registration too, as one line; these are the rest:
configuration that would sit unused, or fail only on its first call.
"""

from __future__ import annotations

from collections.abc import Mapping

from lockgate.config.mcp import McpServerConfig
from lockgate.errors import ConfigError
from lockgate.mcp.pins import pin_command
from lockgate.workflows import pin_path, read_pins


def mcp_findings(servers: Mapping[str, McpServerConfig], users: Mapping[str, set[str]]) -> list[str]:
    """One line per finding: a server no workflow uses; a configured tool a user's pins lack."""
    findings = []
    for name, server in servers.items():
        where = f"lockgate.toml [mcp.servers.{name}]"
        workflows = sorted(users.get(name, ()))
        if not workflows:
            findings.append(f"{where}: no workflow calls setup.mcp({name!r}): remove the section or use it")
        for workflow in workflows:
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
