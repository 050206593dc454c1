"""The example service's MCP tools, built with the ``mcp`` SDK's ``MCPServer`` over a ``Desk``.

Reads: ``list_tickets``, ``get_ticket``, ``find_effect`` (what a write under an idempotency key
did: how a caller settles a call that got no answer). Writes: ``add_comment``, ``close_ticket``,
``issue_credit``, each honouring the idempotency key header. ``Change`` re-registers a tool with
another description, more arguments or other annotations, as a server changed after review would.
"""

from __future__ import annotations

import inspect
import logging
import typing
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations
from pydantic import BaseModel

from lockgate_infra.mcp_example.desk import Desk


class TicketSummary(BaseModel):
    """A ticket in a list."""

    id: str
    title: str
    status: str


class TicketList(BaseModel):
    """The tickets found."""

    tickets: list[TicketSummary]


class TicketView(BaseModel):
    """A whole ticket."""

    id: str
    title: str
    customer: str
    body: str
    status: str
    comments: list[str]
    credited_cents: int


class Receipt(BaseModel):
    """What a write did: the effect's id, and the key it was made under."""

    effect: str
    ticket_id: str
    done: str
    idempotency_key: str | None


class Found(Receipt):
    """The write made under a key: its receipt and the tool's name."""

    tool: str


@dataclass(frozen=True)
class Change:
    """A change to one tool's definition; None leaves that part as it was."""

    description: str | None = None
    new_argument: str | None = None
    """An optional text argument added to the input schema (the tool ignores its value)."""
    annotations: ToolAnnotations | None = None


@dataclass(frozen=True)
class ToolSpec:
    """A tool as registered: its function and the parts of its definition."""

    name: str
    fn: Callable[..., Awaitable[Any]]
    title: str
    description: str
    annotations: ToolAnnotations


def tool_specs(desk: Desk, key_header: str) -> dict[str, ToolSpec]:
    """The six tools over ``desk``; writes read the idempotency key from ``key_header``."""
    header = key_header.lower()

    def key(ctx: Context) -> str | None:
        return (ctx.headers or {}).get(header)

    async def list_tickets(status: str | None = None) -> TicketList:
        return TicketList.model_validate({"tickets": desk.list_tickets(status)})

    async def get_ticket(ticket_id: str) -> TicketView:
        return TicketView.model_validate(desk.get_ticket(ticket_id))

    async def find_effect(idempotency_key: str) -> Found:
        return Found.model_validate(desk.effect_under(idempotency_key))

    async def add_comment(ticket_id: str, body: str, ctx: Context) -> Receipt:
        return Receipt.model_validate(desk.add_comment(ticket_id, body, key(ctx)))

    async def close_ticket(ticket_id: str, reason: str, ctx: Context) -> Receipt:
        return Receipt.model_validate(desk.close_ticket(ticket_id, reason, key(ctx)))

    async def issue_credit(ticket_id: str, amount_cents: int, ctx: Context) -> Receipt:
        return Receipt.model_validate(desk.issue_credit(ticket_id, amount_cents, key(ctx)))

    read = ToolAnnotations(read_only_hint=True, open_world_hint=False)
    keyed = f" Send an {key_header} header to make a retry safe."
    found = f"What the write sent with this {key_header} did; an error if none was made under it."
    return {
        spec.name: spec
        for spec in (
            ToolSpec(
                "list_tickets", list_tickets, "List tickets", "List tickets, optionally by status.", read
            ),
            ToolSpec("get_ticket", get_ticket, "Get a ticket", "Read one ticket with its comments.", read),
            ToolSpec("find_effect", find_effect, "Find a write by its key", found, read),
            ToolSpec(
                "add_comment",
                add_comment,
                "Add a comment",
                "Add a comment to a ticket; the customer sees it." + keyed,
                ToolAnnotations(destructive_hint=False, idempotent_hint=False, open_world_hint=True),
            ),
            ToolSpec(
                "close_ticket",
                close_ticket,
                "Close a ticket",
                "Close an open ticket." + keyed,
                ToolAnnotations(destructive_hint=False, idempotent_hint=True, open_world_hint=False),
            ),
            ToolSpec(
                "issue_credit",
                issue_credit,
                "Issue a credit",
                "Credit the ticket's customer an amount in cents." + keyed,
                ToolAnnotations(destructive_hint=True, idempotent_hint=False, open_world_hint=True),
            ),
        )
    }


def build_mcp_server(specs: dict[str, ToolSpec], changes: dict[str, Change]) -> MCPServer:
    """An MCPServer with every tool, each with its change applied; the root logger left as it was."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:  # MCPServer() calls logging.basicConfig(), which would configure the root logger
        server = MCPServer("lockgate-example-tickets", version="1.0.0", log_level="WARNING")
    finally:
        root.handlers[:], root.level = handlers, level
    for spec in specs.values():
        register(server, spec, changes.get(spec.name))
    return server


def replace(server: MCPServer, spec: ToolSpec, change: Change | None) -> None:
    """Register ``spec`` again on a running ``server``, with ``change`` applied."""
    server.remove_tool(spec.name)
    register(server, spec, change)


def register(server: MCPServer, spec: ToolSpec, change: Change | None) -> None:
    """Add ``spec`` to ``server``, with ``change`` applied."""
    change = change or Change()
    fn = spec.fn if change.new_argument is None else _with_argument(spec.fn, change.new_argument)
    server.add_tool(
        fn,
        name=spec.name,
        title=spec.title,
        description=change.description or spec.description,
        annotations=change.annotations or spec.annotations,
    )


def _with_argument(fn: Callable[..., Awaitable[Any]], name: str) -> Callable[..., Awaitable[Any]]:
    """``fn`` with one more optional text argument in its signature, which it ignores."""
    signature = inspect.signature(fn, eval_str=True)
    extra = inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default="", annotation=str)

    async def changed(**kwargs: Any) -> Any:
        kwargs.pop(name, None)
        return await fn(**kwargs)

    changed.__signature__ = signature.replace(parameters=[*signature.parameters.values(), extra])  # type: ignore[attr-defined]
    changed.__annotations__ = {**typing.get_type_hints(fn), name: str}
    changed.__name__, changed.__doc__ = fn.__name__, fn.__doc__
    return changed
