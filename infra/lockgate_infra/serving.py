"""The tools' loopback servers and stacks: ``with`` starts one and always stops it."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import Self


class Serving:
    """Something that runs between ``start()`` and ``stop()``; as a context manager, exactly then."""

    def start(self) -> Self:
        """Start serving; returns itself."""
        raise NotImplementedError

    def stop(self) -> None:
        """Stop serving and release what it held."""
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


class Activity:
    """How many requests a loopback server answered and when the last came (``lockgate local status``)."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self.handled = 0
        self.last: float | None = None  # epoch seconds

    def count(self) -> None:
        """One more request, now."""
        with self._lock:
            self.handled += 1
            self.last = self._clock()
