"""Route inbox events to task handlers by source and event type."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from lockgate.freshness import EntityVersions
from lockgate.inbox.models import Delivery, Status, delivery_key
from lockgate.telemetry import Log, Metrics
from lockgate.webhooks.decode import event_document


@dataclass(frozen=True)
class InboxEvent:
    """A delivery as a handler or a task's ``start`` sees it: metadata plus the raw body."""

    delivery: Delivery
    """The stored inbox item: ``delivery_id``, ``source``, ``event_type``, ``received_at``, ``attempts``."""

    body: bytes
    """The body exactly as the provider sent it (already verified): ``json()`` parses it."""

    @classmethod
    def claimed(
        cls, source: str, delivery_id: str, event_type: str, body: bytes, received_at: int = 0
    ) -> InboxEvent:
        """A delivery as the worker hands it to its handler once claimed: for rigs, benchmarks, tests."""
        delivery = Delivery(
            pk=delivery_key(source, delivery_id),
            source=source,
            delivery_id=delivery_id,
            event_type=event_type,
            status=Status.PROCESSING,
            received_at=received_at,
            available_at=received_at,
        )
        return cls(delivery, body)

    @property
    def source(self) -> str:
        """The webhook source (or ``schedule``/``approval`` in later kinds of event)."""
        return self.delivery.source

    @property
    def event_type(self) -> str:
        """The provider's event type."""
        return self.delivery.event_type

    def json(self) -> Any:
        """The event the body carries, as JSON data, as the receiver decoded it; BadDelivery if none.

        A JSON body parsed; a form body's ``payload=<JSON>`` (GitHub's form option, Slack's
        interactivity) parsed, or its fields as an object of strings (a Slack slash command);
        Shopify's XML as its JSON twin. So each content type a provider offers is the same event.
        """
        return event_document(self.body, self.delivery.content_type)


@dataclass
class TaskContext:
    """What a plain handler (``setup.router.add(source, event_type, handler)``) may use besides the event.

    A handler is ``handler(event, context) -> str``: it returns a one-line outcome for the inbox
    record; raising ``BadDelivery`` sets the delivery aside at once, any other error retries it (up to
    the inbox's ``max_attempts``).
    """

    run_id: str
    """This delivery's run id (``run#<source>#<delivery id>``), for logs and ledger keys."""

    remaining_seconds: Callable[[], float]
    """Seconds left before the Lambda times out: stop starting new work well before zero."""

    versions: EntityVersions
    """Out-of-order protection: ``versions.apply_if_newer(entity, event_time, delivery_id)`` raises
    ``StaleEvent`` (recorded as done, not applied) when a newer event for ``entity`` was applied."""

    log: Log
    """The function's structured logger (``log.info(message, extra={...})``)."""

    metrics: Metrics
    """The function's metrics (``metrics.add_metric(name=..., unit="Count", value=1)``)."""

    extras: dict[str, Any] = field(default_factory=dict)
    """Free for a handler's own use; the worker leaves it empty."""


class TaskHandler(Protocol):
    """Handles one event and returns a one-line outcome; raising means "retry later"."""

    def __call__(self, event: InboxEvent, context: TaskContext) -> str:
        """Do the work."""
        ...


# `lockgate inbox send-test`: verified, stored and queued like any delivery, then done by the
# worker without running a task (so checking a new source never pays a model or acts).
TEST_EVENT = "lockgate.test"


def acknowledge_test(event: InboxEvent, context: TaskContext) -> str:
    """A signed test delivery: it came through; nothing else to do."""
    return f"test delivery from {event.source}: received, verified and processed (no task runs for it)"


def no_task(event: InboxEvent, context: TaskContext) -> str:
    """The default: nothing is configured for this event; record that and move on."""
    return f"no task for {event.source} event {event.event_type!r}"


@dataclass(frozen=True)
class Route:
    """One rule: a source and an event type pattern (exact, ``prefix.*`` or ``*``)."""

    source: str
    event_type: str
    handler: TaskHandler

    def matches(self, source: str, event_type: str) -> bool:
        """Whether this rule covers the event."""
        if source != self.source:
            return False
        if self.event_type in ("*", event_type):
            return True
        return self.event_type.endswith(".*") and event_type.startswith(self.event_type[:-1])

    @property
    def specificity(self) -> int:
        """Exact beats prefix beats wildcard; longer prefixes beat shorter ones."""
        if self.event_type == "*":
            return 0
        if self.event_type.endswith(".*"):
            return len(self.event_type)
        return 10_000


class Router:
    """Chooses the handler for each event; the most specific rule wins."""

    def __init__(self, default: TaskHandler = no_task) -> None:
        self._routes: list[Route] = []
        self._default = default

    def add(self, source: str, event_type: str, handler: TaskHandler) -> None:
        """Register a handler; a second rule for the same pattern is a mistake."""
        for route in self._routes:
            if (route.source, route.event_type) == (source, event_type):
                raise ValueError(f"a handler for {source} {event_type!r} is already registered")
        self._routes.append(Route(source, event_type, handler))

    def route(self, source: str, event_type: str) -> TaskHandler:
        """The handler for an event, or the default; a test delivery never reaches a task."""
        if event_type == TEST_EVENT:
            return acknowledge_test
        candidates = [r for r in self._routes if r.matches(source, event_type)]
        if not candidates:
            return self._default
        return max(candidates, key=lambda r: r.specificity).handler

    @property
    def routes(self) -> tuple[Route, ...]:
        """Every registered rule."""
        return tuple(self._routes)
