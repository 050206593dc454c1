"""The third example workflow: support tickets, worked on through a ticketing service's MCP server.

Every tool comes from the MCP server ``tickets`` (lockgate.toml's ``[mcp.servers.tickets]``): the
definitions the model is offered are the ones pinned in ``mcp/tickets.json`` (``lockgate mcp pin
tickets --workflow tickets``), and what each tool may do is the config's choice, not the server's:
reading a ticket runs directly (and taints the run: a ticket is its customer's words), a comment
or a closing runs once a person approves it after such a read, a credit always waits for a
person, and listing every ticket is refused. On ``lockgate local``, in the demo and in
``TestStack`` the example MCP server (``lockgate_infra.mcp_example``) plays the service
(``local_stand_ins``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from lockgate import Resource, Setup

if TYPE_CHECKING:  # the stand-in is for the embedded stack: it is not deployed
    from lockgate_infra.mcp_example import McpExample

# The MCP server's address is a template parameter, so `lockgate check` sees that the worker and the
# scheduled jobs (whose reconcile job asks its find_effect tool) are given it.
RESOURCES = (Resource("TicketsMcpUrl", variable="TICKETS_MCP_URL"),)


def register(setup: Setup) -> None:
    """Add the tickets task, its tools those of the ``tickets`` MCP server (ConfigError if unpinned)."""
    from tickets.task import tickets_task

    setup.add_task(tickets_task(setup.mcp("tickets")))


def local_stand_ins(dev_secrets: Mapping[str, str]) -> dict[str, McpExample]:
    """The ticketing service on the embedded stack: the example MCP server at ``TICKETS_MCP_URL`` (the
    variable lockgate.toml's ``[mcp.servers.tickets] url`` names), accepting the stack's development
    credential for it."""
    from lockgate_infra.mcp_example import McpExample

    return {"TICKETS_MCP_URL": McpExample(token=dev_secrets["mcp.tickets"])}
