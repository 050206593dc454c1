"""Faults a test or the chaos harness arms on the example server; each is taken by the call it hits.

- ``crash_after_acting``: the tool acts, then the connection drops before the answer is complete.
- ``answer_slowly``: the answer waits ``seconds`` (after acting, or before it with ``before_acting``).
- ``malformed_answer``: the tool acts, then the answer is replaced by one that is not a valid result.
- ``lose_session``: the call arrives with a session the server does not know (as after a restart).

Refusing connections for a while (``McpExample.flap``) and changing a tool's definition
(``McpExample.change_tool``) are the server's own, since they act on the listener and the tools.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from typing import Literal

Kind = Literal["crash", "slow", "malformed", "lose_session"]
Malformed = Literal["not_json", "bad_result", "html"]


@dataclass(frozen=True)
class Fault:
    """One armed fault: what, on which tool (None: any), how many more times (None: until cleared)."""

    kind: Kind
    tool: str | None = None
    remaining: int | None = 1
    seconds: float = 0.0
    before_acting: bool = False
    malformed: Malformed = "not_json"


@dataclass(frozen=True)
class Fired:
    """A fault that hit a call."""

    kind: Kind
    tool: str | None


class Faults:
    """The armed faults, behind a lock (armed from a test's thread, taken on the server's)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._armed: list[Fault] = []
        self.fired: list[Fired] = []

    def crash_after_acting(self, tool: str | None = None, times: int | None = 1) -> None:
        """The next ``times`` calls (of ``tool``) act, then get no complete answer."""
        self.arm(Fault("crash", tool, times))

    def answer_slowly(
        self, seconds: float, tool: str | None = None, times: int | None = 1, *, before_acting: bool = False
    ) -> None:
        """The next ``times`` calls (of ``tool``) are answered ``seconds`` late."""
        self.arm(Fault("slow", tool, times, seconds=seconds, before_acting=before_acting))

    def malformed_answer(
        self, tool: str | None = None, times: int | None = 1, kind: Malformed = "not_json"
    ) -> None:
        """The next ``times`` calls (of ``tool``) act, then get an answer that is not a valid result."""
        self.arm(Fault("malformed", tool, times, malformed=kind))

    def lose_session(self, times: int | None = 1) -> None:
        """The next ``times`` calls that carry a session id arrive with one the server does not know."""
        self.arm(Fault("lose_session", None, times))

    def arm(self, fault: Fault) -> None:
        """Arm ``fault`` after those already armed."""
        with self._lock:
            self._armed.append(fault)

    def clear(self) -> None:
        """Disarm everything."""
        with self._lock:
            self._armed.clear()

    def take(self, kind: Kind, tool: str | None) -> Fault | None:
        """The first armed fault of ``kind`` for ``tool``, counted down (and fired), or None."""
        with self._lock:
            for index, fault in enumerate(self._armed):
                if fault.kind != kind or fault.tool not in (None, tool):
                    continue
                if fault.remaining is not None:
                    if fault.remaining <= 1:
                        del self._armed[index]
                    else:
                        self._armed[index] = replace(fault, remaining=fault.remaining - 1)
                self.fired.append(Fired(kind, tool))
                return fault
        return None
