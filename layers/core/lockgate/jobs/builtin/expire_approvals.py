"""expire-approvals: proposals nobody decided in time, or approved but never run, become expired.

Proposals are immutable and their state is derived (decisions + clock), so "becoming expired" is
one conditional write: the inbox event ``approval#<id>#expired`` (put only if absent, so a repeat
run changes nothing). The worker's ApprovalExecutor re-checks that event against the proposal, its
decisions and the ledger again, and only then tells the task (DecisionNotice, outcome "expired"): a
proposal decided at the last second, or an approved action that did run, is not reported expired.
"""

from __future__ import annotations

from collections.abc import Mapping

from lockgate import tracing
from lockgate.actions.ledger import Ledger
from lockgate.agent.tasks import Task
from lockgate.approvals.decisions import DecisionStore, State, current_state
from lockgate.approvals.eligibility import allowed_ids
from lockgate.approvals.events import approval_event, enqueue
from lockgate.approvals.executor import EXPIRED_EVENT, action_ran
from lockgate.approvals.proposals import Proposal, ProposalStore, answers_only
from lockgate.config import ApprovalsConfig
from lockgate.inbox.queue import InboxQueue
from lockgate.inbox.store import InboxStore
from lockgate.jobs.builtin.recent_proposals import scan_recent
from lockgate.jobs.contract import JobContext, JobResult

NAME = "expire-approvals"


class ApprovalExpiry:
    """The ``expire-approvals`` job."""

    def __init__(
        self,
        *,
        proposals: ProposalStore,
        decisions: DecisionStore,
        config: ApprovalsConfig,
        inbox: InboxStore,
        queue: InboxQueue,
        ledger: Ledger,
        tasks: Mapping[str, Task],
    ) -> None:
        self._proposals = proposals
        self._decisions = decisions
        self._config = config
        self._inbox = inbox
        self._queue = queue
        self._ledger = ledger  # read only: did an approved action run?
        self._tasks = tasks

    def __call__(self, ctx: JobContext) -> JobResult:
        """Scan recent proposals page by page; enqueue one expiry event per expired proposal."""
        counts = {"expired": 0, "already_expired": 0, "checked": 0}

        def expire(proposal: Proposal) -> None:
            if self._expired(proposal, ctx.clock.now()):
                counts["expired" if self._expire(proposal, ctx) else "already_expired"] += 1

        result = scan_recent(ctx, self._proposals, ctx.clock.now(), expire, counts)
        if result.done:
            ctx.metrics.add_metric(name="ApprovalsExpired", unit="Count", value=counts["expired"])
        return result

    def _expire(self, proposal: Proposal, ctx: JobContext) -> bool:
        """Enqueue the expiry event, in the proposal's trace (linked to this job's run); True if new."""
        attributes = {"lockgate.approval.id": proposal.approval_id, "lockgate.job": "expire_approvals"}
        with tracing.span("expire approval", parent=proposal.extra.get("trace"), attributes=attributes):
            now = int(ctx.clock.now())
            carried = tracing.traceparent() or proposal.extra.get("trace")
            event = approval_event(proposal.approval_id, EXPIRED_EVENT, now, trace=carried)
            return enqueue(self._inbox, self._queue, event, ctx.log)

    def _expired(self, proposal: Proposal, now: float) -> bool:
        # Veto-window proposals run on their own timer; "did this happen?" ones stay with reconcile.
        if answers_only(proposal) or "veto_until" in proposal.extra:
            return False
        if now <= proposal.expires_at and now <= proposal.created_at + proposal.run_within_seconds:
            return False  # neither window can have passed: skip the decisions read
        standing = self._decisions.standing(proposal.approval_id)
        state = current_state(self._config, proposal, standing, now)
        if state is State.EXPIRED:
            return True
        if state is not State.APPROVED:
            return False
        allowed = allowed_ids(self._config, proposal, standing)
        if now <= standing.approved_at(proposal, allowed) + proposal.run_within_seconds:
            return False
        return not action_ran(
            self._ledger, self._tasks.get(proposal.task), proposal, standing.current(proposal)
        )
