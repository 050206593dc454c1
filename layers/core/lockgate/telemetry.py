"""Ports for logs and metrics; handlers pass Powertools' Logger and Metrics in."""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from typing import Any, Protocol


class Log(Protocol):
    """The part of a logger core code uses (Powertools Logger and logging.Logger both fit)."""

    def info(self, msg: str, *args: Any, **kwargs: Any) -> None:
        """Log at INFO."""

    def warning(self, msg: str, *args: Any, **kwargs: Any) -> None:
        """Log at WARNING."""

    def error(self, msg: str, *args: Any, **kwargs: Any) -> None:
        """Log at ERROR."""

    def exception(self, msg: str, *args: Any, **kwargs: Any) -> None:
        """Log at ERROR with the traceback."""


class Metrics(Protocol):
    """The part of Powertools Metrics core code uses."""

    def add_metric(self, name: str, unit: Any, value: float) -> None:
        """Count or measure something (EMF when deployed)."""


class CountingMetrics:
    """Keeps metric totals in memory: the local stack's and the tests' sink."""

    def __init__(self) -> None:
        self.totals: dict[str, float] = {}

    def add_metric(self, name: str, unit: Any, value: float) -> None:
        """Add to the named total."""
        self.totals[name] = self.totals.get(name, 0) + value


class Tracing(Protocol):
    """Trace segments around model calls, tool calls and retries (Powertools Tracer when deployed)."""

    def span(self, name: str, **annotations: str | int | bool) -> AbstractContextManager[Any]:
        """A subsegment; annotations must never carry prompts, bodies or secrets."""
        ...


class NoTracing:
    """Tracing switched off (tests, the local stack)."""

    def span(self, name: str, **annotations: str | int | bool) -> AbstractContextManager[Any]:
        """A do-nothing segment."""
        return nullcontext()
