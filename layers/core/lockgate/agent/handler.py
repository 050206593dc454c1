"""Connects agent tasks to the inbox worker: a task becomes a routed handler."""

from __future__ import annotations

from lockgate.agent.loop import AgentLoop, RunOutcome
from lockgate.agent.tasks import Task
from lockgate.clock import Clock
from lockgate.errors import PermanentFailure
from lockgate.inbox.routing import InboxEvent, Router, TaskContext
from lockgate.model.client import ModelError

MARGIN_SECONDS = 10.0  # leave time to record the outcome before the function times out


class AgentTaskHandler:
    """Runs one task's agent loop for a routed event and returns its outcome line."""

    def __init__(self, task: Task, loop: AgentLoop, clock: Clock) -> None:
        self.task = task
        self._loop = loop
        self._clock = clock

    def __call__(self, event: InboxEvent, context: TaskContext) -> str:
        """Run the loop within the invocation's remaining time."""
        outcome = run_in_time(self._loop, self.task, event, context, self._clock)
        return f"{self.task.name}: {outcome.status}: {outcome.summary}"


def run_in_time(
    loop: AgentLoop, task: Task, event: InboxEvent, context: TaskContext, clock: Clock
) -> RunOutcome:
    """Run (or resume) the task's run for ``event`` within the invocation's remaining time."""
    deadline = clock.now() + max(0.0, context.remaining_seconds() - MARGIN_SECONDS)
    try:
        return loop.run(task, event, deadline)
    except ModelError as exc:
        if not exc.retryable:
            # Our key, our billing or our request is wrong: retrying the delivery cannot help.
            raise PermanentFailure(f"model call failed ({exc.kind}, request {exc.request_id})") from exc
        raise  # retried with backoff by the worker; recorded steps are replayed, not re-bought


def route_tasks(router: Router, tasks: list[Task], loop: AgentLoop, clock: Clock) -> None:
    """Register each task's trigger with the router."""
    for task in tasks:
        router.add(task.source, task.event_type, AgentTaskHandler(task, loop, clock))
