"""The local stand-in for EventBridge Scheduler: the template's schedules on a (compressed) clock.

Simulated time starts at the real time and runs ``clock_speed`` times faster (1440 plays a day in
a minute). Each occurrence invokes the schedule's target with its Input, ``<aws.scheduler.
scheduled-time>`` filled in with the simulated time, as Scheduler would. Rate schedules count
from the start, as Scheduler counts from when a schedule is created.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from lockgate.errors import LockgateError
from lockgate.jobs.schedule import ScheduleExpression, iso
from lockgate_infra.local.background import Background
from lockgate_infra.local.health import Health
from lockgate_infra.local.template import Schedule

log = logging.getLogger("lockgate_infra.local")

SCHEDULED_TIME = "<aws.scheduler.scheduled-time>"
MAX_PER_TICK = 10  # occurrences fired per schedule per tick; older ones are dropped when behind


class LocalScheduler(Background):
    """Fires each enabled schedule's occurrences; ``fire_due`` is one deterministic tick."""

    name = "scheduler"

    def __init__(
        self,
        schedules: Sequence[Schedule],
        invoke: Callable[[str, Any], Any],
        *,
        clock_speed: float = 1.0,
        start: float | None = None,
        monotonic: Callable[[], float] = time.monotonic,
        tick_seconds: float = 0.2,
    ) -> None:
        if clock_speed <= 0:
            raise ValueError("--clock-speed must be more than 0")
        self._schedules = [(s, ScheduleExpression.parse(s.expression)) for s in schedules if s.enabled]
        self._invoke = invoke
        self._speed = clock_speed
        self._start = time.time() if start is None else start
        self._monotonic = monotonic
        self._origin = monotonic()
        self._tick = tick_seconds
        self._fired_until = {s.name: self._start for s, _ in self._schedules}
        self._stop = threading.Event()
        self.health = Health()
        self.fired: list[tuple[str, str]] = []  # (schedule, simulated time), for the banner and tests

    @property
    def speed(self) -> float:
        """How many simulated seconds pass per real second."""
        return self._speed

    def now(self) -> float:
        """The simulated time, epoch seconds."""
        return self._start + (self._monotonic() - self._origin) * self._speed

    def due(self) -> int:
        """Occurrences due by the simulated clock and not fired yet (a tick fires them)."""
        now = self.now()
        return sum(
            len(list(expression.occurrences(self._fired_until[schedule.name], now, anchor=self._start)))
            for schedule, expression in self._schedules
        )

    def fire_due(self) -> int:
        """Invoke every occurrence due since the last tick; returns how many were invoked."""
        now = self.now()
        fired = 0
        for schedule, expression in self._schedules:
            due = list(expression.occurrences(self._fired_until[schedule.name], now, anchor=self._start))
            self._fired_until[schedule.name] = now
            if len(due) > MAX_PER_TICK:
                log.warning(
                    "%s: running behind, skipping %d occurrences", schedule.name, len(due) - MAX_PER_TICK
                )
                due = due[-MAX_PER_TICK:]
            for moment in due:
                self._fire(schedule, moment)
                fired += 1
        return fired

    def _fire(self, schedule: Schedule, moment: float) -> None:
        raw = (schedule.input or "{}").replace(SCHEDULED_TIME, iso(moment))
        self.fired.append((schedule.name, iso(moment)))
        self.health.invoking(1, schedule.function)
        try:
            result = self._invoke(schedule.function, json.loads(raw))
        except LockgateError as exc:  # a domain error says what is wrong in one line (e.g. not wired)
            self.health.invoked(exc)
            log.error("schedule %s at %s: %s: %s", schedule.name, iso(moment), type(exc).__name__, exc)
            return
        except Exception as exc:  # noqa: BLE001 - Scheduler would retry and dead-letter; locally we report it
            self.health.invoked(exc)
            log.exception("schedule %s at %s: %s failed", schedule.name, iso(moment), schedule.function)
            return
        self.health.invoked()
        log.info("schedule %s at %s -> %s %s", schedule.name, iso(moment), schedule.function, _short(result))

    def start(self) -> None:
        """Tick in a background thread until ``stop``."""
        self._start_thread("local-scheduler")

    def _run(self) -> None:
        while not self._stop.wait(self._tick):
            self.fire_due()


def _short(result: Any) -> str:
    text = json.dumps(result, default=str)
    return text if len(text) <= 160 else text[:157] + "..."
