"""A retry budget: retries may add at most a share of the first attempts' load."""

from __future__ import annotations

import threading
from collections import deque

from lockgate.clock import Clock, SystemClock

__all__ = ["RetryBudget"]


class RetryBudget:
    """In-process: retries allowed only while they stay within ``ratio`` of first attempts (sliding minute).

    ``min_retries_per_minute`` lets a quiet process still retry a little.
    """

    def __init__(
        self, ratio: float = 0.2, *, min_retries_per_minute: int = 1, clock: Clock | None = None
    ) -> None:
        self._ratio = ratio
        self._floor = min_retries_per_minute
        self._clock = clock or SystemClock()
        self._attempts: deque[tuple[float, bool]] = deque()
        self._lock = threading.Lock()

    def allow_retry(self) -> bool:
        """True when one more retry keeps retries within the budget."""
        with self._lock:
            self._expire()
            firsts = sum(1 for _, first in self._attempts if first)
            retries = len(self._attempts) - firsts
            return retries + 1 <= self._floor + self._ratio * firsts

    def record_attempt(self, first: bool) -> None:
        """Count an attempt sent: ``first`` for a new call, False for a retry."""
        with self._lock:
            self._expire()
            self._attempts.append((self._clock.now(), first))

    def _expire(self) -> None:
        cutoff = self._clock.now() - 60
        while self._attempts and self._attempts[0][0] <= cutoff:
            self._attempts.popleft()
