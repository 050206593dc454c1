"""How a poller or the scheduler is doing: what ``lockgate local status`` and the console report.

Each of them (an SQS queue's poller, a DynamoDB stream's poller, the scheduler) keeps a ``Health``
that its own thread updates. It is **stalled** when one of these holds, else **alive**:

1. its thread is not running: it ended (the error that ended it is shown);
2. its last 3 reads of its queue or stream failed, or the last 3 invocations of its function raised;
3. one invocation has run longer than the function's ``Timeout`` (Lambda would have stopped it);
4. work has waited more than 10 s (messages visible in its queue, records in its stream after the
   last one it took, schedule occurrences due) and in that time it took nothing and invoked nothing.

A stalled poller stays stalled until the condition clears (e.g. a later invocation succeeds).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

STALL_SECONDS = 10.0  # how long work may wait untaken
ERRORS_IN_A_ROW = 3


@dataclass(frozen=True)
class Verdict:
    """Alive or stalled, and why."""

    stalled: bool
    reason: str = ""

    @property
    def state(self) -> str:
        """``alive`` or ``stalled``."""
        return "stalled" if self.stalled else "alive"


def describe(error: BaseException) -> str:
    """An error in one short line: its type and its first line."""
    first = (str(error).strip().splitlines() or [""])[0]
    return f"{type(error).__name__}: {first}"[:200] if first else type(error).__name__


class Health:
    """Counters and times one background thread keeps about its own work."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self.handled = 0  # items (messages, records, occurrences) handed to the function
        self.last_activity: float | None = None  # when it last took work or finished an invocation
        self.busy_since: float | None = None  # an invocation in progress since then
        self.busy_with = ""  # the function being invoked (its Timeout bounds rule 3)
        self.read_errors = 0  # in a row
        self.invocation_errors = 0  # in a row
        self.last_error = ""
        self.ended = ""  # the error that ended its thread
        self._waiting_since: float | None = None

    def read(self, error: BaseException | None = None) -> None:
        """A read of the queue or stream finished; ``error`` if it failed."""
        with self._lock:
            if error is None:
                self.read_errors = 0
                return
            self.read_errors += 1
            self.last_error = describe(error)

    def invoking(self, count: int, function: str = "") -> None:
        """``count`` items handed to ``function``: an invocation starts."""
        with self._lock:
            self.handled += count
            self.busy_since = self.last_activity = self._clock()
            self.busy_with = function

    def invoked(self, error: BaseException | None = None) -> None:
        """The invocation ended; ``error`` if it raised."""
        with self._lock:
            self.busy_since, self.last_activity = None, self._clock()
            if error is None:
                self.invocation_errors = 0
                return
            self.invocation_errors += 1
            self.last_error = describe(error)

    def end(self, error: BaseException) -> None:
        """The thread ended on ``error``."""
        with self._lock:
            self.ended = self.last_error = describe(error)

    def verdict(
        self, running: bool, waiting: int, timeout_seconds: Callable[[str], float], what: str = "item"
    ) -> Verdict:
        """Alive or stalled by the rules above; ``waiting`` of ``what`` (a message, a record) wait now."""
        now = self._clock()
        with self._lock:
            if waiting <= 0:
                self._waiting_since = None
            elif self._waiting_since is None:
                self._waiting_since = now
            if not running:
                return Verdict(True, f"its thread is not running ({self.ended or 'stopped'})")
            if self.read_errors >= ERRORS_IN_A_ROW:
                return Verdict(True, f"its last {self.read_errors} reads failed ({self.last_error})")
            if self.invocation_errors >= ERRORS_IN_A_ROW:
                failed = self.invocation_errors
                return Verdict(True, f"its last {failed} invocations failed ({self.last_error})")
            if self.busy_since is not None:
                limit, ran = timeout_seconds(self.busy_with), now - self.busy_since
                if ran > limit:
                    why = f"one invocation has run {ran:.0f} s, longer than "
                    return Verdict(True, why + f"{self.busy_with}'s Timeout of {limit:g} s")
                return Verdict(False)
            since = max(self._waiting_since or now, self.last_activity or 0.0)
            if waiting > 0 and now - since > STALL_SECONDS:
                noun = what if waiting == 1 else f"{what}s"
                return Verdict(True, f"{waiting} {noun} waiting for {now - since:.0f} s and none taken")
            return Verdict(False)
