"""Time as a dependency, so leases, tolerances and backoff are testable."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    """Anything that tells the current time in epoch seconds."""

    def now(self) -> float:
        """Epoch seconds."""
        ...


class SystemClock:
    """The real clock."""

    def now(self) -> float:
        """Epoch seconds from the system clock."""
        return time.time()


class FixedClock:
    """A clock that moves only when told to (tests, replays)."""

    def __init__(self, start: float = 1_767_225_600.0) -> None:
        self._now = start

    def now(self) -> float:
        """The current fake time."""
        return self._now

    def advance(self, seconds: float) -> None:
        """Move time forward."""
        self._now += seconds
