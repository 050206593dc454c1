"""A person's decision taken up by the run that proposed the call (``Task.respond``).

The approvals side sends a ``run`` / ``decision.response`` inbox event
(``lockgate.actions.responses``); the worker routes it here. The run is reopened by a conditional
write from the status it ended with (so one decision resumes it at a time), the decision is
recorded as its next step, and the loop runs the task again for the event that started the run:
it replays every recorded step (no model call, no tool run again), hears the decision and goes on
from there within what is left of ``max_steps``. A redelivered event finds its decision recorded
and changes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from lockgate.actions.once import Operations
from lockgate.actions.responses import DecisionResponse
from lockgate.actions.tools import fingerprint
from lockgate.agent import decision_step
from lockgate.agent.batches import RECHECK_SECONDS
from lockgate.agent.handler import run_in_time
from lockgate.agent.loop import AgentLoop
from lockgate.agent.runs import Runs
from lockgate.agent.tasks import DecisionNotice, Task, tell_decision
from lockgate.clock import Clock
from lockgate.errors import BadDelivery, Deferred, DeliveryNotFound
from lockgate.inbox.bodies import BodyStore
from lockgate.inbox.routing import InboxEvent, TaskContext
from lockgate.inbox.store import InboxStore
from lockgate.telemetry import Log, Metrics

# How a run ended that a decision can continue: it ended its turn, or ran out of steps or budget
# (then the decision is recorded and the run ends again at once, saying so). A reply cut off, a
# refusal or a request nobody could read ended it in a way a tool result cannot follow.
RESUMABLE = frozenset({"completed", "step_limit", "budget_limit"})
WAIT_SECONDS = 60  # a run still going usually ends within a minute


class StartingEvents(Protocol):
    """The inbox event that started a run (``Run.delivery``), or None when it is no longer kept."""

    def get(self, delivery: str) -> InboxEvent | None:
        """The event as the worker handed it to the task."""
        ...


class StoredEvents:
    """Starting events read back from the inbox (a large body from its S3 object)."""

    def __init__(self, inbox: InboxStore, bodies: BodyStore) -> None:
        self._inbox = inbox
        self._bodies = bodies

    def get(self, delivery: str) -> InboxEvent | None:
        """The stored delivery and its body; None once it has expired."""
        try:
            stored = self._inbox.get(delivery)
        except DeliveryNotFound:
            return None
        if stored.body is not None:
            return InboxEvent(stored, stored.body)
        return InboxEvent(stored, self._bodies.get(stored.body_ref) if stored.body_ref else b"")


class DecisionResponses:
    """The worker's handler for ``run`` / ``decision.response`` events: resumes the run that proposed."""

    def __init__(
        self,
        tasks: Sequence[Task],
        loop: AgentLoop,
        runs: Runs,
        started: StartingEvents,
        clock: Clock,
        log: Log,
        metrics: Metrics,
        ledger: Operations | None = None,
    ) -> None:
        self._ledger = ledger  # a decision no run can hear goes to on_decision instead, once
        self._tasks: Mapping[str, Task] = {task.name: task for task in tasks}
        self._loop = loop
        self._runs = runs
        self._started = started
        self._clock = clock
        self._log = log
        self._metrics = metrics

    def __call__(self, event: InboxEvent, context: TaskContext) -> str:
        """Resume the run with the decision; Deferred while the run is still going."""
        response = _response(event)
        task = self._tasks.get(response.task)
        if task is None or not task.respond:
            why = "no longer exists" if task is None else "does not set respond"
            return self._not_heard(response, f"task {response.task} {why}", task)
        run = self._runs.get(response.run_id)
        if run is None or run.task != task.name:
            return self._not_heard(response, f"no run {response.run_id} of task {task.name}", task)
        key = decision_step.decision_key(response)
        heard = decision_step.has_heard(run, response)
        ours = run.status == "running" and run.resumed_by == key  # a retry after this decision reopened it
        if heard and not ours:  # a redelivery: the run heard it already
            return f"{task.name}: already heard {key}; the run is {run.status}: {run.outcome}"
        if run.status == "running" and not ours:
            # A task whose every step is batched waits for its batches an hour at a time: so does this.
            wait = RECHECK_SECONDS if task.batch == "every" else WAIT_SECONDS
            raise Deferred(f"run {run.run_id} is still going: the decision waits until it ends", wait)
        if not ours and run.status not in RESUMABLE:
            return self._not_heard(response, f"the run ended as {run.status} ({run.outcome})", task)
        started = self._started.get(run.delivery)
        if started is None:
            why = f"the event that started run {run.run_id} is no longer kept"
            return self._not_heard(response, why, task)
        if not ours and not self._runs.reopen(run, key):
            raise Deferred(f"another decision is resuming run {run.run_id}", WAIT_SECONDS)
        if not heard:
            data = decision_step.step_data(response)
            self._runs.record(run, decision_step.next_step(run), decision_step.KIND, data)
            self._metrics.add_metric(name="DecisionHeard", unit="Count", value=1)
            self._log.info("decision resumes its run", extra={"run": run.run_id, "decision": key})
        outcome = run_in_time(self._loop, task, started, context, self._clock)
        if outcome.status == "skipped":  # start() skips its event now: end the run rather than leave it open
            self._runs.finish(run, "skipped", outcome.summary, run.totals)
        return f"{task.name}: {outcome.status}: {outcome.summary}"

    def _not_heard(self, response: DecisionResponse, why: str, task: Task | None = None) -> str:
        """The run cannot hear it: the task's ``on_decision`` is told instead (once), so the
        customer still hears what was decided."""
        self._metrics.add_metric(name="DecisionNotHeard", unit="Count", value=1)
        self._log.warning("decision not heard by its run", extra={"run": response.run_id, "why": why})
        if task is None or task.on_decision is None or self._ledger is None:
            return f"not run: {why}"
        outcome = response.notice_outcome()
        notice = DecisionNotice(
            response.approval_id,
            response.run_id,
            response.tool,
            response.summary or response.tool,
            outcome,
            response.reason,
            task.facts_from(response.facts),
        )
        tell_decision(self._ledger, task, notice, fingerprint(response.proposed))
        return f"not run: {why}; the task was told through on_decision ({outcome})"


def _response(event: InboxEvent) -> DecisionResponse:
    """The decision in the event's body; BadDelivery (set aside) if it is not one."""
    data = event.json()
    try:
        return DecisionResponse.from_json(data)
    except (KeyError, TypeError, AttributeError) as exc:
        raise BadDelivery(f"not a decision response: {type(exc).__name__} {exc}") from exc
