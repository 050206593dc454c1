"""reconcile-operations: settle ledger entries whose outcome is unknown, or ask a person.

- IN_PROGRESS past its lease: the executor died mid-call, so the entry becomes UNKNOWN.
- UNKNOWN: the tool's ``reconcile`` hook asks the downstream system by idempotency key. Found →
  SUCCEEDED with the downstream result (never executed again). Not found, or the hook cannot
  tell, or the tool has no hook → a proposal asks a person whether it happened ("approve" = it
  happened, "reject" = it did not); a later run applies their answer as SUCCEEDED or FAILED.
Every settlement is one conditional write on the state the job read (UNKNOWN).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from lockgate import tracing
from lockgate.actions.ledger import Ledger, Operation, OpState
from lockgate.actions.once import traced
from lockgate.actions.tools import OutcomeUnknown, fingerprint
from lockgate.agent.tasks import Task
from lockgate.approvals.decisions import DecisionStore, State, current_state
from lockgate.approvals.proposals import (
    HOUR,
    RESOLVE_TASK,
    RESOLVE_TOOL,
    Proposal,
    ProposalStore,
    approval_id_for,
)
from lockgate.config import ApprovalsConfig
from lockgate.errors import DeliveryNotFound, StoreUnavailable
from lockgate.inbox.store import InboxStore
from lockgate.jobs.contract import JobContext, JobResult

NAME = "reconcile-operations"
PAGE_SIZE = 25
PHASES = (OpState.IN_PROGRESS.value, OpState.UNKNOWN.value)
Hook = Callable[[str, Mapping[str, Any]], Any]


def escalation_id(op_key: str) -> str:
    """The one proposal that asks a person about this operation."""
    return approval_id_for(op_key, RESOLVE_TOOL)


class OperationReconciler:
    """The ``reconcile-operations`` job."""

    def __init__(
        self,
        *,
        ledger: Ledger,
        proposals: ProposalStore,
        decisions: DecisionStore,
        config: ApprovalsConfig,
        tasks: Mapping[str, Task],
        inbox: InboxStore | None = None,
    ) -> None:
        self._inbox = inbox  # the delivery an operation ran for: its trace, when traced
        self._ledger = ledger
        self._proposals = proposals
        self._decisions = decisions
        self._config = config
        self._tasks = tasks

    def __call__(self, ctx: JobContext) -> JobResult:
        """Stuck entries first (they become UNKNOWN), then every UNKNOWN entry, page by page."""
        counts = {"now_unknown": 0, "succeeded": 0, "failed": 0, "escalated": 0, "waiting": 0, "errors": 0}
        phase = str((ctx.cursor or {}).get("phase", PHASES[0]))
        start: dict[str, Any] | None = (ctx.cursor or {}).get("start")
        for state in PHASES[PHASES.index(phase) :]:
            while True:
                if ctx.should_stop():
                    return JobResult(done=False, cursor={"phase": state, "start": start}, counts=counts)
                page, start = self._ledger.open_page(OpState(state), start, PAGE_SIZE)
                for op in page:
                    counts[self._traced_settle(ctx, op)] += 1
                if start is None:
                    break
        for name in ("succeeded", "failed", "escalated", "errors"):
            if counts[name]:
                ctx.metrics.add_metric(name=f"Reconciled_{name}", unit="Count", value=counts[name])
        ctx.metrics.add_metric(name="OperationsAwaitingPerson", unit="Count", value=counts["waiting"])
        return JobResult(done=True, counts=counts)

    def _traced_settle(self, ctx: JobContext, op: Operation) -> str:
        """Settle one entry in its delivery's trace (linked to this job's run), when traced."""
        attributes = {"lockgate.job": "reconcile-operations", "gen_ai.tool.name": op.tool, **traced(op)}
        with tracing.span("reconcile operation", parent=self._trace_of(op), attributes=attributes):
            outcome = self._settle(ctx, op)
            tracing.annotate({"lockgate.reconcile.outcome": outcome})
            return outcome

    def _trace_of(self, op: Operation) -> str | None:
        if self._inbox is None or not tracing.enabled():
            return None  # not traced: no read
        try:
            return self._inbox.get(op.run_id).trace
        except (DeliveryNotFound, StoreUnavailable):
            return None  # gone (the inbox keeps deliveries for days, the ledger for months)

    def _settle(self, ctx: JobContext, op: Operation) -> str:
        if op.state is OpState.IN_PROGRESS:
            if (op.lease_expires_at or 0) >= int(ctx.clock.now()):
                return "waiting"  # still running under a live lease: leave it to its executor
            if not self._ledger.mark_unknown_if_stuck(op.key):
                return "waiting"
            ctx.log.warning("stuck operation marked UNKNOWN", extra={"operation": op.key, "tool": op.tool})
            return "now_unknown"  # the UNKNOWN phase of this run picks it up
        escalation = self._proposals.get(escalation_id(op.key))
        if escalation is not None:
            return self._apply_answer(ctx, op, escalation)
        hook, services = self._hook(op.tool)
        if hook is None:
            return self._escalate(ctx, op, f"{op.tool} has no reconcile hook: a person must check")
        try:
            found = hook(op.idempotency_key, services)
        except OutcomeUnknown as exc:
            return self._escalate(ctx, op, f"{op.tool} could not tell: {exc}")
        except Exception:  # noqa: BLE001 - the downstream is unreachable: stays UNKNOWN, tried next run
            ctx.log.exception("reconcile hook failed", extra={"operation": op.key, "tool": op.tool})
            return "errors"
        if found is None:
            return self._escalate(ctx, op, f"no record of it found downstream (key {op.idempotency_key})")
        if not self._ledger.resolve_unknown(op.key, OpState.SUCCEEDED, found, None):
            return "waiting"  # settled by someone else since the read
        ctx.log.info("operation reconciled", extra={"operation": op.key, "state": "SUCCEEDED"})
        return "succeeded"

    def _apply_answer(self, ctx: JobContext, op: Operation, escalation: Proposal) -> str:
        standing = self._decisions.standing(escalation.approval_id)
        state = current_state(self._config, escalation, standing, ctx.clock.now())
        if state not in (State.APPROVED, State.REJECTED):
            return "waiting"  # pending (or expired unanswered: it stays listed as UNKNOWN)
        by = sorted({d.reviewer for d in standing.decisions if d.fingerprint == escalation.fingerprint})
        if state is State.APPROVED:
            settled = self._ledger.resolve_unknown(op.key, OpState.SUCCEEDED, {"confirmed_by": by}, None)
        else:
            why = f"a person confirmed it did not happen ({', '.join(by)})"
            settled = self._ledger.resolve_unknown(op.key, OpState.FAILED, None, why)
        if not settled:
            return "waiting"
        ctx.log.info("operation settled by a person", extra={"operation": op.key, "answer": state.value})
        return "succeeded" if state is State.APPROVED else "failed"

    def _escalate(self, ctx: JobContext, op: Operation, why: str) -> str:
        now = int(ctx.clock.now())
        rule = self._config.for_tool(RESOLVE_TOOL)
        args = {
            "operation": op.key,
            "tool": op.tool,
            "idempotency_key": op.idempotency_key,
            "run_id": op.run_id,
        }
        proposal = Proposal(
            approval_id=escalation_id(op.key),
            task=RESOLVE_TASK,
            run_id=op.run_id,
            tool=RESOLVE_TOOL,
            args=args,
            fingerprint=fingerprint(args),
            summary=f"Did this happen? {op.summary}"[:500],
            unverified_reason="",
            why=(why, "Approve if it happened, reject if it did not. Nothing is executed either way."),
            created_at=now,
            expires_at=now + rule.decide_within_hours * HOUR,
            run_within_seconds=rule.run_within_hours * HOUR,
            reviewers_required=rule.reviewers_required,
            requester=NAME,
            extra={"resolves": op.key},
        )
        self._proposals.propose(proposal)  # write-once: a repeat finds the stored one
        ctx.log.warning("operation escalated to a person", extra={"operation": op.key, "tool": op.tool})
        return "escalated"

    def _hook(self, tool_name: str) -> tuple[Hook | None, Mapping[str, Any]]:
        for task in self._tasks.values():
            tool = task.tool(tool_name)
            if tool is not None and tool.reconcile is not None:
                return tool.reconcile, task.services
        return None, {}
