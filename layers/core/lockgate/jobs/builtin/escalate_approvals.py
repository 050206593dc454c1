"""escalate-approvals: a request nobody decided in time goes to a second group of reviewers.

A tool's ``[approvals.tools.NAME]`` may say ``escalate_after_minutes`` and ``escalate_roles``. Once a
pending proposal has waited that long, by the schedule's time (the occurrence's ``scheduled_time``,
so ``lockgate local --clock-speed`` escalates on its compressed clock as AWS does on its own), this
job marks it escalated: one conditional write, so a repeat or an overlapping run changes nothing.
From then on the reviewers with those roles may decide it too, whichever side asks (the mark is a
stored fact, not a clock reading), and the notifier, which sees the change on the Approvals stream,
sends each of them their own signed link and brings the Slack message up to date.
"""

from __future__ import annotations

from lockgate.approvals.decisions import DecisionStore, State, current_state
from lockgate.approvals.eligibility import escalation_time
from lockgate.approvals.proposals import Proposal, ProposalStore, answers_only
from lockgate.config import ApprovalsConfig
from lockgate.jobs.builtin.recent_proposals import scan_recent
from lockgate.jobs.contract import JobContext, JobResult
from lockgate.jobs.schedule import parse_iso

NAME = "escalate-approvals"


class ApprovalEscalation:
    """The ``escalate-approvals`` job."""

    def __init__(
        self, *, proposals: ProposalStore, decisions: DecisionStore, config: ApprovalsConfig
    ) -> None:
        self._proposals = proposals
        self._decisions = decisions
        self._config = config

    def __call__(self, ctx: JobContext) -> JobResult:
        """Scan recent proposals page by page; escalate each one that is due, once."""
        now = parse_iso(ctx.scheduled_time)  # the schedule's time: what "waited long enough" means
        counts = {"escalated": 0, "checked": 0}
        if not any(s.escalate_after_minutes for s in self._config.tools.values()):
            return JobResult(done=True, counts=counts)  # no tool escalates: nothing to read

        def escalate(proposal: Proposal) -> None:
            if self._due(proposal, now) and self._proposals.escalate(proposal.approval_id, int(now)):
                counts["escalated"] += 1
                ctx.log.info("approval escalated", extra={"approval": proposal.approval_id})

        result = scan_recent(ctx, self._proposals, now, escalate, counts)
        if result.done:
            ctx.metrics.add_metric(name="ApprovalsEscalated", unit="Count", value=counts["escalated"])
        return result

    def _due(self, proposal: Proposal, now: float) -> bool:
        """Pending, escalating, waited long enough, not expired, not escalated yet."""
        minutes = self._config.for_tool(proposal.tool).escalate_after_minutes
        if minutes is None or proposal.escalated_at is not None or answers_only(proposal):
            return False
        if not escalation_time(proposal, minutes) <= now < proposal.expires_at:
            return False
        standing = self._decisions.standing(proposal.approval_id)
        return current_state(self._config, proposal, standing, now) is State.PENDING
