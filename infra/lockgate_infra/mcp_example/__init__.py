"""An example MCP server built with the ``mcp`` SDK: a small ticketing service, with faults to inject.

Reads (``list_tickets``, ``get_ticket``) and writes (``add_comment``, ``close_ticket``,
``issue_credit``) that honour an ``Idempotency-Key`` header, behind a bearer token. Tests and the
chaos harness start it in-process (``with McpExample() as server:``), read what it actually did
(``server.desk.effects``, ``server.desk.acted(key)``, ``server.calls()``) and inject faults
(``server.faults``, ``server.flap``, ``server.change_tool``); ``python -m
lockgate_infra.mcp_example --port N`` serves it from another process, with a control API.
"""

from lockgate_infra.mcp_example.desk import Desk, DeskError, Effect, Ticket
from lockgate_infra.mcp_example.faults import Fault, Faults, Fired
from lockgate_infra.mcp_example.front import Seen
from lockgate_infra.mcp_example.server import EXAMPLE_TOKEN, McpExample

__all__ = [
    "EXAMPLE_TOKEN",
    "Desk",
    "DeskError",
    "Effect",
    "Fault",
    "Faults",
    "Fired",
    "McpExample",
    "Seen",
    "Ticket",
]
