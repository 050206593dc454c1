"""The example ticketing service's state: tickets, and a record of every effect, keyed for replays.

A write with an idempotency key acts once: a repeat with the same key and arguments returns the
first result and acts no more (recorded as a replay); the same key with other arguments is refused.
``effects`` is what the service actually did, which is what a test or the chaos harness asserts on.
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError


class DeskError(ToolError):
    """A request the desk refuses (no such ticket, a closed ticket, a key reused with other arguments).

    The SDK's ``ToolError``: the caller gets its text in an ``isError`` result (other exceptions
    reach it only as "Error executing tool").
    """


@dataclass
class Ticket:
    """One support ticket."""

    id: str
    title: str
    customer: str
    body: str = ""
    status: str = "open"
    comments: list[str] = field(default_factory=list)
    credited_cents: int = 0


@dataclass(frozen=True)
class Effect:
    """One time the service acted: which tool, with what, under which key, and what it answered."""

    id: str
    tool: str
    arguments: Mapping[str, Any]
    key: str | None
    result: Mapping[str, Any]
    at: float


def sample_tickets() -> list[Ticket]:
    """Three tickets to start with."""
    return [
        Ticket("T-1", "Parcel arrived damaged", "ana@example.com", "The mug was in pieces."),
        Ticket("T-2", "Where is my order?", "ben@example.com", "Order A-1042 has not arrived."),
        Ticket("T-3", "Invoice address wrong", "cy@example.com", "Please fix the company name."),
    ]


class Desk:
    """Tickets and effects behind a lock: the tool handlers run on the server's event loop thread,
    tests and the control API read from others."""

    def __init__(
        self, tickets: Iterable[Ticket] | None = None, clock: Callable[[], float] = time.time
    ) -> None:
        self._lock = threading.Lock()
        self._clock = clock
        self.tickets: dict[str, Ticket] = {}
        self.effects: list[Effect] = []
        self.replays: list[tuple[str, str]] = []  # (key, tool) of each repeat answered from the record
        self._by_key: dict[str, Effect] = {}
        self.reset(tickets)

    def reset(self, tickets: Iterable[Ticket] | None = None) -> None:
        """Back to ``tickets`` (the sample ones by default), with no effects recorded."""
        with self._lock:
            self.tickets = {t.id: t for t in (sample_tickets() if tickets is None else tickets)}
            self.effects.clear()
            self.replays.clear()
            self._by_key.clear()

    def add_ticket(self, ticket: Ticket) -> None:
        """Add or replace a ticket (tests: a huge body, a closed one)."""
        with self._lock:
            self.tickets[ticket.id] = ticket

    def list_tickets(self, status: str | None) -> list[dict[str, Any]]:
        """Each ticket's id, title and status, optionally only those with ``status``."""
        with self._lock:
            return [
                {"id": t.id, "title": t.title, "status": t.status}
                for t in self.tickets.values()
                if status is None or t.status == status
            ]

    def get_ticket(self, ticket_id: str) -> dict[str, Any]:
        """The whole ticket."""
        with self._lock:
            return asdict(self._ticket(ticket_id))

    def add_comment(self, ticket_id: str, body: str, key: str | None) -> dict[str, Any]:
        """Append a comment."""

        def change(ticket: Ticket) -> str:
            ticket.comments.append(body)
            return f"comment {len(ticket.comments)} added"

        return self._act("add_comment", {"ticket_id": ticket_id, "body": body}, key, change)

    def close_ticket(self, ticket_id: str, reason: str, key: str | None) -> dict[str, Any]:
        """Close an open ticket."""

        def change(ticket: Ticket) -> str:
            if ticket.status == "closed":
                raise DeskError(f"ticket {ticket.id} is already closed")
            ticket.status = "closed"
            return "closed"

        return self._act("close_ticket", {"ticket_id": ticket_id, "reason": reason}, key, change)

    def issue_credit(self, ticket_id: str, amount_cents: int, key: str | None) -> dict[str, Any]:
        """Credit the ticket's customer."""

        def change(ticket: Ticket) -> str:
            if amount_cents <= 0:
                raise DeskError("amount_cents must be positive")
            ticket.credited_cents += amount_cents
            return f"credited {amount_cents} cents"

        return self._act("issue_credit", {"ticket_id": ticket_id, "amount_cents": amount_cents}, key, change)

    def effect_under(self, key: str) -> dict[str, Any]:
        """What the write made under ``key`` answered (DeskError when nothing was done under it)."""
        with self._lock:
            effect = self._by_key.get(key)
            if effect is None:
                raise DeskError(f"nothing was done under the idempotency key {key!r}")
            return {**copy.deepcopy(dict(effect.result)), "tool": effect.tool}

    def acted(self, key: str) -> int:
        """How many times the service acted under ``key`` (0 or 1 if keys work)."""
        with self._lock:
            return sum(1 for e in self.effects if e.key == key)

    def snapshot(self) -> dict[str, Any]:
        """Everything as JSON-able data (the control API's ``GET /_example/state``)."""
        with self._lock:
            return {
                "tickets": [asdict(t) for t in self.tickets.values()],
                "effects": [asdict(e) for e in self.effects],
                "replays": [list(r) for r in self.replays],
            }

    def _act(
        self, tool: str, arguments: dict[str, Any], key: str | None, change: Callable[[Ticket], str]
    ) -> dict[str, Any]:
        with self._lock:
            if key is not None and key in self._by_key:
                first = self._by_key[key]
                if first.tool != tool or first.arguments != arguments:
                    raise DeskError(f"idempotency key {key!r} was used with other arguments")
                self.replays.append((key, tool))
                return copy.deepcopy(dict(first.result))
            ticket = self._ticket(arguments["ticket_id"])
            done = change(ticket)
            effect_id = f"E-{len(self.effects) + 1}"
            result = {"effect": effect_id, "ticket_id": ticket.id, "done": done, "idempotency_key": key}
            effect = Effect(effect_id, tool, dict(arguments), key, result, self._clock())
            self.effects.append(effect)
            if key is not None:
                self._by_key[key] = effect
            return copy.deepcopy(result)

    def _ticket(self, ticket_id: str) -> Ticket:
        ticket = self.tickets.get(ticket_id)
        if ticket is None:
            raise DeskError(f"no ticket {ticket_id!r}")
        return ticket
