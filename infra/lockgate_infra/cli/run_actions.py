"""What became of each action a run proposed: who decided, when, and whether it ran.

Read from where each fact is kept: the proposal (Approvals table), the reviewers' decisions
(Decisions table), the operation ledger row it ran under (State table) and the approval event the
worker handled (Inbox table) when the ledger holds nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lockgate.actions.ledger import Ledger, Operation, OpState
from lockgate.agent.runs import Run
from lockgate.approvals.decisions import Choice, DecisionRecord, DecisionStore, State, state_of
from lockgate.approvals.events import SOURCE
from lockgate.approvals.proposals import Proposal, ProposalStore, approval_id_for
from lockgate.errors import DeliveryNotFound
from lockgate.inbox.models import Status, delivery_key
from lockgate.inbox.store import InboxStore

ASKED = ("proposed", "veto window")  # the run's record of a call that became a proposal


@dataclass(frozen=True)
class ActionOutcome:
    """One proposed action, as an operator reads it."""

    approval_id: str
    summary: str
    decision: str  # "approved by alice at ..." / "rejected by bob at ..." / "waiting ..."
    result: str  # "ran: SUCCEEDED at ..." / "not run: ..." / "outcome unknown: ..."


@dataclass(frozen=True)
class RunActions:
    """The stores a run's proposed actions are read from."""

    proposals: ProposalStore
    decisions: DecisionStore
    ledger: Ledger
    inbox: InboxStore

    def of(self, run: Run, now: float) -> dict[str, ActionOutcome]:
        """Every action the run asked a person about, by tool_use id, in the order it asked."""
        outcomes = {}
        for call_id in proposed_calls(run):
            proposal = self.proposals.get(approval_id_for(run.run_id, call_id))
            if proposal is not None:
                outcomes[call_id] = self._outcome(proposal, now)
        return outcomes

    def _outcome(self, proposal: Proposal, now: float) -> ActionOutcome:
        standing = self.decisions.standing(proposal.approval_id)
        decisions = standing.decisions
        state = state_of(proposal, decisions, now, versions=standing.versions)
        veto_until = proposal.extra.get("veto_until")
        if state in (State.PENDING, State.EXPIRED) and isinstance(veto_until, int):
            # A veto-window action runs unless someone rejects it before the window closes.
            if now <= veto_until:
                decision = f"runs at {utc(veto_until)} unless a person rejects it"
                return ActionOutcome(proposal.approval_id, proposal.summary, decision, "not run yet")
            decision = f"nobody vetoed it by {utc(veto_until)}"
            return ActionOutcome(proposal.approval_id, proposal.summary, decision, self._ran(proposal))
        if state is State.PENDING:
            decision = f"waiting for a person (decide by {utc(proposal.expires_at)})"
            return ActionOutcome(proposal.approval_id, proposal.summary, decision, "not run yet")
        if state is State.EXPIRED:
            decision = f"expired at {utc(proposal.expires_at)}: nobody decided"
            return ActionOutcome(proposal.approval_id, proposal.summary, decision, "will not run")
        verdict = Choice.APPROVE if state is State.APPROVED else Choice.REJECT
        decision = f"{state.value} by " + ", ".join(_who(d) for d in decisions if d.verdict is verdict)
        if state is State.REJECTED:
            return ActionOutcome(proposal.approval_id, proposal.summary, decision, "will not run")
        return ActionOutcome(proposal.approval_id, proposal.summary, decision, self._ran(proposal))

    def _ran(self, proposal: Proposal) -> str:
        """From the ledger row it ran under, else from the approval event the worker handled."""
        op_key = proposal.extra.get("op_key")
        op = self.ledger.get(op_key) if isinstance(op_key, str) else None
        if op is not None and op.run_id not in ("", proposal.run_id):
            # Same business identity as an action another run made (e.g. a replay): not done twice.
            return f"not run again: the ledger already holds it from run {op.run_id} ({describe(op)})"
        if op is not None:
            return describe(op)
        try:
            event = self.inbox.get(delivery_key(SOURCE, f"{proposal.approval_id}#{State.APPROVED.value}"))
        except DeliveryNotFound:
            return "not run yet"
        if event.status is Status.DONE:
            return event.outcome or "handled"
        if event.status is Status.FAILED:
            return f"could not run: {event.last_error}"
        return f"queued to run ({event.last_error})" if event.last_error else "queued to run"


def describe(op: Operation) -> str:
    """A ledger row in words."""
    when = f" at {utc(op.updated_at)}" if op.updated_at else ""
    if op.state is OpState.SUCCEEDED:
        return f"ran: SUCCEEDED{when}"
    if op.state is OpState.FAILED:
        return f"ran: FAILED{when}: {op.error or 'no detail'}"
    if op.state in (OpState.UNKNOWN, OpState.IN_PROGRESS):
        return f"outcome {op.state.value}{when}: waits for reconciliation (it may or may not have happened)"
    return f"{op.state.value}{when}"


def proposed_calls(run: Run) -> list[str]:
    """The tool_use ids of the calls the run turned into proposals."""
    ids: list[str] = []
    for step in run.steps:
        if step.kind != "tools":
            continue
        for call, result in zip(step.data.get("calls", []), step.data.get("results", []), strict=False):
            if call.get("outcome") in ASKED and result.get("tool_use_id"):
                ids.append(str(result["tool_use_id"]))
    return ids


def as_json(outcome: ActionOutcome) -> dict[str, Any]:
    """JSON-ready."""
    return {
        "approval_id": outcome.approval_id,
        "summary": outcome.summary,
        "decision": outcome.decision,
        "result": outcome.result,
    }


def utc(seconds: float | None) -> str:
    """Epoch seconds as a UTC time a person reads, e.g. 2026-11-30 14:05:09 UTC."""
    import datetime as dt

    if not seconds:
        return "-"
    return dt.datetime.fromtimestamp(seconds, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _who(decision: DecisionRecord) -> str:
    return f"{decision.reviewer} at {utc(decision.decided_at)} (via {decision.via})"
