"""Turning a call that needs a person into a proposal, and telling the model it has NOT happened."""

from __future__ import annotations

from typing import Any

from lockgate import tracing
from lockgate.actions.facts import RunFacts
from lockgate.actions.guard import NeedsPerson
from lockgate.actions.once import operation_key_for
from lockgate.actions.tools import canonical_json, fingerprint
from lockgate.approvals.events import VetoTimer
from lockgate.approvals.limits import LimitReached, PendingLimits, holds
from lockgate.approvals.proposals import HOUR, Proposal, approval_id_for
from lockgate.clock import Clock
from lockgate.config import ApprovalsConfig, ToolApproval
from lockgate.telemetry import Log, Metrics


class ApprovalRequests:
    """Writes proposals for the loop. Links and tokens are made elsewhere and never reach the model."""

    def __init__(
        self,
        config: ApprovalsConfig,
        clock: Clock,
        log: Log,
        metrics: Metrics,
        *,
        limits: PendingLimits,
        veto_timer: VetoTimer | None = None,
    ) -> None:
        self._limits = limits
        self._config = config
        self._clock = clock
        self._log = log
        self._metrics = metrics
        self._veto_timer = veto_timer

    def request(
        self,
        *,
        task: str,
        run_id: str,
        call_id: str,
        need: NeedsPerson,
        unverified_reason: str,
        facts: RunFacts,
    ) -> tuple[str, str]:
        """Propose the call; returns (text for the model, outcome for the run record)."""
        tool = need.tool
        rule = self._config.for_tool(tool.name)
        now = int(self._clock.now())
        approval_id = approval_id_for(run_id, call_id)
        proposal = _proposal(task, (approval_id, run_id, call_id), need, unverified_reason, facts, rule, now)
        canonical = proposal.args
        veto = rule.pattern == "veto" and tool.reversible and self._veto_timer is not None
        if veto:
            proposal.extra["veto_until"] = now + rule.veto_minutes * 60
        target = tool.target(need.args) if tool.target is not None else None
        proposal.extra["holds"] = holds(task, tool.name, target, facts.sender)
        try:
            stored, created = self._limits.propose(proposal, now)
        except LimitReached as refused:
            return self._refused(task, tool.name, refused)
        tracing.annotate(
            {
                "lockgate.approval.id": stored.approval_id,
                "lockgate.approval.pattern": rule.pattern,
                "lockgate.approval.reviewers_required": stored.reviewers_required,
                "lockgate.approval.rules": list(stored.requirement.applied) if stored.requirement else [],
                "lockgate.approval.created": created,
            }
        )
        if created:
            self._metrics.add_metric(name="ApprovalProposed", unit="Count", value=1)
            self._log.info(
                "approval proposed",
                extra={
                    "approval": stored.approval_id,
                    "tool": tool.name,
                    "args_bytes": len(canonical_json(canonical)),
                },
            )
        if veto and self._veto_timer is not None:
            until = int(stored.extra.get("veto_until", now))
            self._veto_timer.schedule(stored.approval_id, now, until)
            minutes = max(1, (until - now) // 60)
            return (
                f"NOT DONE YET: {tool.name} will run in {minutes} minutes unless a person rejects it. "
                "Nothing has happened yet; do not say it is done."
            ), "veto window"
        return (
            f"NOT DONE YET: {tool.name} is waiting for a person's approval ({need.reason}). Nothing "
            "has happened. Tell the customer their request was passed to the team; do not say it is done."
        ), "proposed"

    def _refused(self, task: str, tool: str, refused: LimitReached) -> tuple[str, str]:
        """What the model is told when a pending limit refused the proposal (nothing was stored)."""
        if refused.limit == "target":  # a second request on one target: counted, not alarmed
            self._metrics.add_metric(name="ProposalAlreadyPending", unit="Count", value=1)
        else:  # a full cap: PendingApprovalsPilingUp alarms on it
            self._metrics.add_metric(name="ApprovalFloodRefused", unit="Count", value=1)
        self._log.warning(
            "proposal refused by a pending limit", extra={"task": task, "tool": tool, "limit": refused.limit}
        )
        return (
            f"NOT DONE: {refused.reason}, so {tool} was not queued. Nothing has happened. "
            "Tell the customer the team will follow up; do not ask for it again."
        ), f"refused: {refused.limit} limit"

    def draft_only(self, tool: str) -> bool:
        """Whether ``tool`` is configured as "draft": the assistant prepares it, a person sends it."""
        return self._config.for_tool(tool).pattern == "draft"

    def waiting(self, task: str, tool: str, target: str) -> dict[str, Any] | None:
        """The arguments of the proposal waiting on (task, tool, target), or None (for policies)."""
        return self._limits.waiting(task, tool, target, self._clock.now())


def _proposal(
    task: str,
    ids: tuple[str, str, str],
    need: NeedsPerson,
    unverified_reason: str,
    facts: RunFacts,
    rule: ToolApproval,
    now: int,
) -> Proposal:
    """The proposal a person reads: code-built from the real arguments, with every reason asked."""
    approval_id, run_id, call_id = ids
    tool, args = need.tool, need.args
    canonical: dict[str, Any] = args.model_dump(mode="json")
    # The guard's requirement (the file's rules and the tool's hook); never less than the file says.
    requirement = need.requirement.stricter(rule.requirement(canonical, high_stakes=tool.high_stakes))
    return Proposal(
        approval_id=approval_id,
        task=task,
        run_id=run_id,
        tool=tool.name,
        args=canonical,
        fingerprint=fingerprint(canonical),
        summary=tool.summary_with_facts(args, facts) if tool.summary_with_facts else tool.summary(args),
        unverified_reason=unverified_reason,
        why=need.reasons,
        created_at=now,
        expires_at=now + rule.decide_within_hours * HOUR,
        run_within_seconds=rule.run_within_hours * HOUR,
        reviewers_required=requirement.reviewers_required,
        requirement=requirement,
        requester=f"agent:{task}",
        call_id=call_id,
        # The ledger key it will run under, so an operator can find what became of it.
        extra={
            "facts": dict(facts.values),
            "pattern": rule.pattern,
            "op_key": operation_key_for(tool, args, run_id, canonical),
            # What follows each button, for the page (the approval side has no tools to ask).
            "after": {"approve": tool.after_approve, "reject": tool.after_reject},
            # What a reviewer may change, and its schema: the approval side checks an edit against it.
            **({"editable": tool.editable_schema()} if tool.editable else {}),
            # The proposing span: the notice, the decision and the run that follows join its trace.
            **({"trace": carried} if (carried := tracing.traceparent()) else {}),
        },
        tool_schema=tool.args_fingerprint(),
        facts=tuple(tool.facts(args, facts)) if tool.facts else (),
    )
