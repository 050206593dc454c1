"""How far apart a task's runs start, as this process sees them: the observed event rate.

The prompt-cache lifetime of an event-driven task (``Task.cache_ttl="auto"``) is chosen from it.
Kept in the process (the worker's loop lives as long as its Lambda environment): no table, no
write per run. A process sees only the runs it handles, so with several environments the gaps it
sees are longer than the task's real ones; that errs towards the hour, which costs little more
than five minutes when runs are close (both mostly read the cache) and far less when they are not.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

from lockgate.model.prompt_cache import prefix_tokens

if TYPE_CHECKING:
    from lockgate.agent.tasks import Task
    from lockgate.model.price_table import PriceTable

KEEP = 8  # the mean of the last few gaps: a change of pace shows within a few runs


class RunGaps:
    """The start times of each task's last runs in this process, and the mean gap between them."""

    def __init__(self, keep: int = KEEP) -> None:
        self._keep = keep
        self._starts: dict[str, deque[tuple[str, float]]] = {}

    def observe(self, task: str, run_id: str, now: float) -> float | None:
        """Record a run's start; the mean gap between the runs seen so far (None: fewer than two).

        The same run seen again (a redelivery of its event) is not a new start.
        """
        starts = self._starts.setdefault(task, deque(maxlen=self._keep + 1))
        if not starts or starts[-1][0] != run_id:
            starts.append((run_id, now))
        return self.mean_gap(task)

    def mean_gap(self, task: str) -> float | None:
        """The mean seconds between the task's runs seen here; None before the second."""
        starts = self._starts.get(task)
        if not starts or len(starts) < 2:
            return None
        return max(1e-3, (starts[-1][1] - starts[0][1]) / (len(starts) - 1))

    def cache_ttl(self, task: Task, tools: list[Any], prices: PriceTable, run_id: str, now: float) -> str:
        """Record the run's start; its cache lifetime for the task's prefix (``Task.prompt_cache_ttl``)."""
        observed = self.observe(task.name, run_id, now)
        return task.prompt_cache_ttl(prefix_tokens(task.system_prompt(), tools), prices, observed)
