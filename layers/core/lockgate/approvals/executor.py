"""Executing a decided proposal, in the worker: re-check everything, then run once through the ledger.

A decision arrives as an inbox event (``approval#<id>#approved|rejected``). Nothing about it is
trusted: the worker re-reads the proposal and the decisions (which its role may read but never
write), recomputes the argument fingerprint, checks the run window and the tool's hard policies against
current facts, and only then executes through the operation ledger under the same key the agent
loop would have used, so an action runs at most once however many events arrive.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from lockgate.actions.guard import policy_refusal
from lockgate.actions.ledger import Ledger, LedgerConflict, OpState
from lockgate.actions.once import operation_key_for, run_once
from lockgate.actions.tools import RunFacts, ToolArgumentsInvalid, fingerprint
from lockgate.agent.tasks import DecisionNotice, Task
from lockgate.approvals.decisions import Choice, DecisionRecord, DecisionStore, State, state_of
from lockgate.approvals.limits import PendingLimits
from lockgate.approvals.proposals import Proposal, ProposalStore, answers_only
from lockgate.clock import Clock
from lockgate.config import ApprovalsConfig
from lockgate.errors import BadDelivery, Deferred, StoreUnavailable
from lockgate.inbox.routing import InboxEvent, TaskContext
from lockgate.telemetry import Log, Metrics

# The reconcile-operations job runs every 15 minutes: look again a little after it.
UNSETTLED_RETRY = 16 * 60

EXPIRED_EVENT = "expired"  # sent by the expire-approvals job; never runs anything


class ApprovalExecutor:
    """The worker's handler for ``approval`` inbox events."""

    def __init__(
        self,
        *,
        proposals: ProposalStore,
        decisions: DecisionStore,
        tasks: Mapping[str, Task],
        ledger: Ledger,
        config: ApprovalsConfig,
        clock: Clock,
        log: Log,
        metrics: Metrics,
        limits: PendingLimits | None = None,
    ) -> None:
        self._limits = limits  # a settled proposal gives back its places (one per target, caps)
        self._proposals = proposals
        self._decisions = decisions
        self._tasks = tasks
        self._ledger = ledger
        self._config = config
        self._clock = clock
        self._log = log
        self._metrics = metrics

    def __call__(self, event: InboxEvent, context: TaskContext) -> str:
        """Run an approved action once, or record why it will not run."""
        data = event.json()
        approval_id = data.get("approval_id") if isinstance(data, dict) else None
        proposal = self._proposals.get(approval_id) if isinstance(approval_id, str) else None
        if proposal is None:
            raise BadDelivery("approval event for an unknown proposal")
        if answers_only(proposal):
            return self._not_run(proposal.approval_id, "an answer about an operation: reconcile applies it")
        decisions = self._decisions.for_approval(proposal.approval_id)
        allowed = frozenset(r.id for r in self._config.reviewers_for(proposal.tool))
        now = self._clock.now()
        state = state_of(proposal, decisions, now, allowed)
        task = self._tasks.get(proposal.task)
        if data.get("state") == EXPIRED_EVENT:
            return self._expire(task, proposal, state, approved_at(proposal, decisions, allowed), now)
        if state is State.REJECTED:
            by = ", ".join(sorted(d.reviewer for d in decisions if d.verdict is Choice.REJECT))
            self._tell(task, proposal, "rejected", f"rejected by {by}")
            self._release(proposal)
            return self._not_run(
                proposal.approval_id, f"rejected by {by}: {proposal.summary} will not happen"
            )
        veto_until = proposal.extra.get("veto_until")
        if state is State.PENDING and isinstance(veto_until, int):
            if now < veto_until:  # early (clock skew, a redelivery): come back when the window closes
                raise Deferred("veto window still open", delay_seconds=int(veto_until - now) + 1)
            # A reversible action whose veto window closed with nobody rejecting it.
            return self._settled(proposal, self._run(task, proposal, ["veto window passed"], veto_until))
        if state is not State.APPROVED:
            if state is State.EXPIRED:
                self._tell(task, proposal, "expired", "nobody decided in time")
                self._release(proposal)
            return self._not_run(proposal.approval_id, f"not approved ({state.value})")
        approvers = sorted(
            {
                d.reviewer
                for d in decisions
                if d.verdict is Choice.APPROVE
                and d.reviewer in allowed
                and d.fingerprint == proposal.fingerprint
            }
        )
        approved = approved_at(proposal, decisions, allowed)
        if now > approved + proposal.run_within_seconds:
            self._release(proposal)
            return self._not_run(proposal.approval_id, "approved too long ago: the run window has passed")
        return self._settled(proposal, self._run(task, proposal, approvers, approved))

    def _expire(
        self, task: Task | None, proposal: Proposal, state: State, approved: float, now: float
    ) -> str:
        """Tell the task "expired" only if nobody decided in time, or it was approved but never ran."""
        if state is State.EXPIRED:
            self._tell(task, proposal, "expired", "nobody decided in time")
            return self._settled(
                proposal, self._not_run(proposal.approval_id, "expired: nobody decided in time")
            )
        window_passed = state is State.APPROVED and now > approved + proposal.run_within_seconds
        if window_passed and not action_ran(self._ledger, task, proposal):
            self._tell(task, proposal, "expired", "approved, but not run within the run window")
            return self._settled(
                proposal, self._not_run(proposal.approval_id, "expired: approved but not run in time")
            )
        return self._not_run(proposal.approval_id, f"not expired ({state.value})")

    def _run(self, task: Task | None, proposal: Proposal, approvers: list[str], approved_at: float) -> str:
        """Fingerprint, task, arguments and hard policies re-checked; then the ledger runs it once."""
        if fingerprint(proposal.args) != proposal.fingerprint:
            return self._not_run(proposal.approval_id, "the stored arguments were changed")
        tool = task.tool(proposal.tool) if task else None
        if task is None or tool is None:
            return self._not_run(
                proposal.approval_id, f"task {proposal.task} no longer offers {proposal.tool}"
            )
        if proposal.tool_schema and proposal.tool_schema != tool.args_fingerprint():
            # A newer deployment changed what the tool takes: what the person approved is not what
            # would run now. It expires instead, and the task is told (lockgate.schema's rule).
            self._tell(task, proposal, "expired", "the action changed in a newer version of the tool")
            return self._not_run(
                proposal.approval_id, f"{proposal.tool}'s arguments changed since it was proposed"
            )
        try:
            args = tool.validate(proposal.args)
        except ToolArgumentsInvalid as exc:
            return self._not_run(proposal.approval_id, f"arguments no longer valid: {exc}")
        facts = task.facts_from(proposal.extra.get("facts", {}))
        refusal = policy_refusal(tool, args, facts)
        if refusal is not None:
            return self._not_run(proposal.approval_id, f"refused by policy now: {refusal}")
        try:
            op = run_once(
                self._ledger,
                tool,
                args,
                canonical=proposal.args,
                run_id=proposal.run_id,
                facts=facts,
                services=task.services,
                summary=f"{proposal.summary} (approved by {', '.join(approvers)})",
            )
        except LedgerConflict as exc:
            return self._not_run(proposal.approval_id, f"conflict: {exc}")
        self._metrics.add_metric(name=f"ApprovedAction_{op.state.value}", unit="Count", value=1)
        self._log.info(
            "approved action",
            extra={"approval": proposal.approval_id, "state": op.state.value, "approvers": approvers},
        )
        if op.state not in (OpState.SUCCEEDED, OpState.FAILED):
            # The action may or may not have happened: telling the customer "not done" could be
            # false. Come back once reconciliation (or a person) has settled it, then tell once.
            raise Deferred(
                f"{proposal.summary}: outcome {op.state.value}, waiting for reconciliation", UNSETTLED_RETRY
            )
        result = json.dumps(op.result, default=str)[:300] if op.state is OpState.SUCCEEDED else op.error
        outcome = "done" if op.state is OpState.SUCCEEDED else "failed"
        self._tell(task, proposal, outcome, op.error or "", facts)
        return (
            f"{proposal.summary}: {op.state.value} (approved by {', '.join(approvers)} at "
            f"{int(approved_at)}) {result or ''}"
        ).strip()

    def _tell(
        self, task: Task | None, proposal: Proposal, outcome: str, detail: str, facts: RunFacts | None = None
    ) -> None:
        """Let the task close the loop (e.g. email the customer) once per proposal and outcome."""
        if task is None or task.on_decision is None:
            return
        notice = DecisionNotice(
            proposal.approval_id,
            proposal.run_id,
            proposal.tool,
            proposal.summary,
            outcome,
            detail,
            facts or task.facts_from(proposal.extra.get("facts", {})),
        )
        hook = task.on_decision
        try:
            self._ledger.execute(
                op_key=f"decision-notice#{proposal.approval_id}#{outcome}",
                fingerprint=proposal.fingerprint,
                tool="on_decision",
                run_id=proposal.run_id,
                summary=f"tell the task: {outcome}",
                effect=lambda key: hook(notice, task.services),
            )
        except LedgerConflict:
            return

    def _settled(self, proposal: Proposal, outcome: str) -> str:
        """``outcome``, after giving back the proposal's places: it will never run (again)."""
        self._release(proposal)
        return outcome

    def _release(self, proposal: Proposal) -> None:
        if self._limits is None:
            return
        try:
            self._limits.release(proposal)
        except StoreUnavailable as exc:
            # The slot frees itself when the proposal's windows end; the next proposal waits till then.
            self._metrics.add_metric(name="PendingReleaseFailed", unit="Count", value=1)
            self._log.warning(
                "pending places not released", extra={"approval": proposal.approval_id, "error": str(exc)}
            )

    def _not_run(self, approval_id: str, why: str) -> str:
        self._metrics.add_metric(name="ApprovedActionNotRun", unit="Count", value=1)
        self._log.info("approval not executed", extra={"approval": approval_id, "why": why})
        return f"not run: {why}"


def approved_at(proposal: Proposal, decisions: list[DecisionRecord], allowed: frozenset[str]) -> float:
    """When the last counted approval was given (0 if none)."""
    times = [
        d.decided_at
        for d in decisions
        if d.verdict is Choice.APPROVE and d.reviewer in allowed and d.fingerprint == proposal.fingerprint
    ]
    return max(times, default=0)


def action_ran(ledger: Ledger, task: Task | None, proposal: Proposal) -> bool:
    """Whether the ledger holds the proposed action (in any state): then it was run, not expired."""
    tool = task.tool(proposal.tool) if task else None
    if tool is None:
        return False
    try:
        args = tool.validate(proposal.args)
    except ToolArgumentsInvalid:
        return False
    return ledger.get(operation_key_for(tool, args, proposal.run_id, proposal.args)) is not None
