"""Facts from our own systems about a run (for policies, thresholds and tools), and facts a reviewer reads."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class RunFacts:
    """Facts from our own systems about this run, never from the model or the content it read.

    A task's ``start`` makes them; policies, thresholds and tools read them. Their ``values`` are
    stored with a proposal, and rebuilt (``Task.restore_facts``) when an approved call runs.
    """

    values: Mapping[str, Any] = field(default_factory=dict)
    """Task-defined facts by name, JSON-able, e.g. ``{"customer_email": the email's verified sender}``."""

    lookup: Any = None
    """Reads current facts (orders, payments) through the workflow's own adapters; None: no lookups.

    It is not stored: when an approved call runs, only ``Task.restore_facts`` can give it back.
    """

    sender: str | None = None
    """The run's untrusted source identity (e.g. the email's From): proposals are capped per sender."""

    pending: Callable[[str, str], Mapping[str, Any] | None] | None = None
    """``(tool, target)`` -> the arguments of the proposal waiting for a person on that target, or None.

    Set by the loop when approvals are wired, so a policy can count what is already pending.
    """

    def get(self, key: str, default: Any = None) -> Any:
        """A fact from ``values`` by name, or ``default``."""
        return self.values.get(key, default)


@dataclass(frozen=True)
class Fact:
    """One fact a reviewer's decision rests on, captured when the proposal is made (``Tool.facts``)."""

    label: str
    """What it is, as the approval page labels it (e.g. "Order status")."""

    value: str
    """Its value as the reviewer reads it (e.g. "delivered")."""

    verified: bool = True
    """True: read from our own systems; False for what someone wrote (a customer's message), shown as such."""
