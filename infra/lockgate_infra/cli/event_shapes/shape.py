"""A shape: one event type of one source as its provider sends it, and where its text is."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

JSON = dict[str, Any]


class ShapeError(ValueError):
    """The event type cannot be what the source's provider sends; the message says what it would be."""


@dataclass(frozen=True)
class EventShape:
    """One event type of one source, as its provider sends it."""

    what: str  # e.g. 'GitHub "issues.opened" events', as the generated prompt names them
    send_event: str  # what a test passes as TestStack.send(event=...)
    stored_type: str  # the event type the receiver stores (the eval's event_type)
    subject: tuple[str, ...]  # where the one-line subject is
    text: tuple[str, ...]  # where the text written by someone outside is
    samples: dict[str, JSON] = field(default_factory=dict)  # "note", "close": each a body
    form: bool = False  # sent form-encoded (a Slack slash command), not as JSON
