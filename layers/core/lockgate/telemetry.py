"""Ports for logs and metrics; handlers pass Powertools' Logger and Metrics in (spans: lockgate.tracing)."""

from __future__ import annotations

import threading
import warnings
from typing import Any, Protocol

# What Powertools' log_metrics warns on each invocation that added no metric. Here that is normal
# (a page opened, a version checked, a job with nothing to do), and the warning only fills the console.
EMPTY_METRICS = "No application metrics to publish"


def expect_empty_metrics() -> None:
    """Silence that one warning (each handler calls this at import); every other warning still shows."""
    warnings.filterwarnings("ignore", message=EMPTY_METRICS, category=UserWarning)


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


class SharedMetrics:
    """Metrics that one batch's records add to from several threads: one add at a time.

    Powertools' ``Metrics`` keeps one metric set per process and adds by reading, changing and
    storing a dict entry (flushing the set at 100 metrics), so two records adding at once could
    lose a value or flush a set mid-change. A lock around each add is all it needs.
    """

    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics
        self._lock = threading.Lock()

    def add_metric(self, name: str, unit: Any, value: float) -> None:
        """Add, alone."""
        with self._lock:
            self._metrics.add_metric(name=name, unit=unit, value=value)


class CountingMetrics:
    """Keeps metric totals in memory: the local stack's and the tests' sink."""

    def __init__(self) -> None:
        self.totals: dict[str, float] = {}
        self._lock = threading.Lock()  # a batch's records add from several threads

    def add_metric(self, name: str, unit: Any, value: float) -> None:
        """Add to the named total."""
        with self._lock:
            self.totals[name] = self.totals.get(name, 0) + value
