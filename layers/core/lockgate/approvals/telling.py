"""Closing the loop after a decision: the task's ``on_decision`` hook, or the run itself.

A task that sets ``Task.respond`` hears a rejection (with the reviewer's words), an edited call
(what ran, or why it did not) and an expiry (nobody decided in time) as its proposed call's
result, and its run continues
(``lockgate.actions.responses``). Everything else, and every task without ``respond``, goes to
``on_decision`` once per proposal and outcome, through the ledger.
"""

from __future__ import annotations

from lockgate.actions.facts import RunFacts
from lockgate.actions.ledger import Ledger
from lockgate.actions.responses import DecisionResponse
from lockgate.agent.tasks import DecisionNotice, Task, tell_decision
from lockgate.approvals.proposals import Proposal
from lockgate.approvals.standing import Current
from lockgate.clock import Clock
from lockgate.inbox.events import enqueue
from lockgate.inbox.queue import InboxQueue
from lockgate.inbox.store import InboxStore
from lockgate.telemetry import Log


class Teller:
    """Tells the task (or its run) what became of a proposal, once."""

    def __init__(
        self,
        ledger: Ledger,
        clock: Clock,
        log: Log,
        inbox: InboxStore | None = None,
        queue: InboxQueue | None = None,
    ) -> None:
        self._ledger = ledger
        self._clock = clock
        self._log = log
        self._inbox = inbox  # None: runs are never resumed (every outcome goes to on_decision)
        self._queue = queue

    def responds(self, task: Task | None) -> bool:
        """Whether the run of ``task`` hears its decisions itself."""
        return task is not None and bool(getattr(task, "respond", False)) and self._inbox is not None

    def respond(  # noqa: PLR0913 - what the run is told
        self,
        proposal: Proposal,
        outcome: str,
        by: list[str],
        reason: str = "",
        current: Current | None = None,
        result: object = None,
        summary: str | None = None,
    ) -> None:
        """The run that proposed the call continues with this as the call's result (an inbox event)."""
        if self._inbox is None or self._queue is None:
            return
        response = DecisionResponse(
            run_id=proposal.run_id,
            approval_id=proposal.approval_id,
            task=proposal.task,
            call_id=proposal.call_id,
            tool=proposal.tool,
            outcome=outcome,
            by=tuple(by),
            reason=reason,
            proposed=dict(proposal.args),
            ran=dict(current.args) if current is not None and outcome == "edited" else None,
            result=result,
            summary=summary or proposal.summary,  # an edited call's own summary: what ran
            facts=dict(proposal.extra.get("facts", {})),
        )
        enqueue(self._inbox, self._queue, response.to_event(int(self._clock.now())), self._log)

    def expired(self, task: Task | None, proposal: Proposal, detail: str) -> None:
        """Nothing will run: the run hears it (``Task.respond``) and continues, or the task is told."""
        if self.responds(task):
            self.respond(proposal, "expired", [], detail)
        else:
            self.tell(task, proposal, "expired", detail)

    def tell(  # noqa: PLR0913 - the notice's parts
        self,
        task: Task | None,
        proposal: Proposal,
        outcome: str,
        detail: str,
        facts: RunFacts | None = None,
        summary: str | None = None,
    ) -> None:
        """Let the task close the loop (e.g. email the customer) once per proposal and outcome."""
        if task is None or task.on_decision is None:
            return
        notice = DecisionNotice(
            proposal.approval_id,
            proposal.run_id,
            proposal.tool,
            summary or proposal.summary,
            outcome,
            detail,
            facts or task.facts_from(proposal.extra.get("facts", {})),
        )
        tell_decision(self._ledger, task, notice, proposal.fingerprint)
