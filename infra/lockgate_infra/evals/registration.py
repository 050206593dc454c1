"""The configured workflows registered offline: their tasks, for a command that reads them (no stack)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from lockgate.config.mcp import McpServerConfig
from lockgate.inbox.routing import Router
from lockgate.workflows import Setup, load_workflows
from lockgate_infra.evals.rig import workflow_environment
from lockgate_infra.local.template import LocalPlan
from lockgate_infra.workflow_path import first_on_path


def dry_registration(
    root: Path, packages: Sequence[str], mcp: Mapping[str, McpServerConfig] | None = None
) -> Setup:
    """The packages registered from ``root``'s ``workflows/`` with the worker's environment as ``root``'s
    template sets it: their tasks, with clients built and never called; ``mcp``: lockgate.toml's servers
    (a workflow's MCP tools are built from their pins, and no server is called)."""
    import boto3

    offline = boto3.session.Session(region_name="us-east-1")  # builds clients; registering calls none
    with first_on_path(root / "workflows"):
        environ = workflow_environment(LocalPlan.from_file(root / "template.yaml"), {}, packages)
        client: Any = offline.client  # boto3's overloads are wider than Setup's factory type
        setup = Setup(router=Router(), environ=environ, client=client, mcp_servers=mcp or {})
        load_workflows(packages, setup)
    return setup
