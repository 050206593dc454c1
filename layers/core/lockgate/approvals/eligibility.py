"""Who may decide a proposal now, and how many must: the current version's requirement, and escalation.

Each version of a proposal carries the ``Requirement`` its approval rules gave it (the proposal as
made, from the worker; an edit, from the worker's check and the approval side's own reading of
``lockgate.toml``). Reviewers with one of its roles may decide it; a version a rule refuses may be
decided by nobody. A tool with escalation adds the reviewers with its ``escalate_roles`` once the
proposal has waited ``escalate_after_minutes``: the escalate-approvals job sends them their links.
"""

from __future__ import annotations

from lockgate.approvals.proposals import Proposal
from lockgate.approvals.standing import Choice, Current, DecisionRecord, Standing, State
from lockgate.approvals.versions import Version
from lockgate.config import ApprovalsConfig, Reviewer
from lockgate.config.rules import Requirement


def requirement_of(config: ApprovalsConfig, proposal: Proposal, current: Current) -> Requirement:
    """What ``current`` needs: its stored requirement, else (an item written before requirements were
    stored) the tool's section with the proposal's count, and its threshold rules on these arguments."""
    section = config.for_tool(proposal.tool)
    stored = current.requirement or (proposal.requirement if current.n == 0 else None)
    if stored is None:
        stored = Requirement(proposal.reviewers_required, section.roles)
    # What was stored came from the worker: the approval side never accepts less than the file says.
    return stored.stricter(section.requirement(current.args))


def escalated(config: ApprovalsConfig, proposal: Proposal) -> bool:
    """Whether the escalate-approvals job escalated the proposal to its tool's second group.

    A recorded fact, not the clock: every side (the page, Slack, the worker) agrees on it, on a
    schedule's time (``lockgate local --clock-speed``) as on AWS's.
    """
    return proposal.escalated_at is not None and bool(config.for_tool(proposal.tool).escalate_roles)


def escalation_time(proposal: Proposal, minutes: int) -> int:
    """When the proposal escalates (never later than it expires)."""
    return min(proposal.created_at + minutes * 60, proposal.expires_at)


def eligible_reviewers(config: ApprovalsConfig, proposal: Proposal, current: Current) -> tuple[Reviewer, ...]:
    """The configured reviewers who may decide ``current`` (none for a refused version): its
    requirement's roles, and once escalated, the tool's escalate_roles."""
    requirement = requirement_of(config, proposal, current)
    if requirement.refused:
        return ()
    found = list(config.reviewers_with(requirement.roles))
    if escalated(config, proposal):
        extra = config.reviewers_with(config.for_tool(proposal.tool).escalate_roles)
        found += [r for r in extra if r not in found]
    return tuple(found)


def approvers_suffice(
    config: ApprovalsConfig, proposal: Proposal, requirement: Requirement, approvers: list[str]
) -> bool:
    """Whether ``approvers`` meet ``requirement`` (read again as the call is about to run)."""
    if requirement.refused:
        return False
    eligible = {r.id for r in config.reviewers_with(requirement.roles)}
    if escalated(config, proposal):
        eligible |= {r.id for r in config.reviewers_with(config.for_tool(proposal.tool).escalate_roles)}
    return len({a for a in approvers if a in eligible}) >= requirement.reviewers_required


def allowed_ids(config: ApprovalsConfig, proposal: Proposal, standing: Standing) -> frozenset[str]:
    """The ids of ``eligible_reviewers`` for the current version."""
    return frozenset(r.id for r in eligible_reviewers(config, proposal, standing.current(proposal)))


def escalation_reviewers(
    config: ApprovalsConfig, proposal: Proposal, current: Current
) -> tuple[Reviewer, ...]:
    """Who escalation adds for ``current`` (reviewers the requirement alone does not allow)."""
    section = config.for_tool(proposal.tool)
    if section.escalate_after_minutes is None:
        return ()
    requirement = requirement_of(config, proposal, current)
    if requirement.refused:
        return ()
    already = {r.id for r in config.reviewers_with(requirement.roles)}
    return tuple(r for r in config.reviewers_with(section.escalate_roles) if r.id not in already)


def current_state(config: ApprovalsConfig, proposal: Proposal, standing: Standing, now: float) -> State:
    """The proposal's state at ``now``: its current version's requirement, counting only the reviewers
    it allows."""
    current = standing.current(proposal)
    required = requirement_of(config, proposal, current).reviewers_required
    allowed = allowed_ids(config, proposal, standing)
    return state_of(proposal, standing.decisions, now, allowed, standing.versions, required)


def state_of(  # noqa: PLR0913 - the proposal, what was said, and who counts
    proposal: Proposal,
    decisions: list[DecisionRecord],
    now: float,
    allowed: frozenset[str] | None = None,
    versions: list[Version] | None = None,
    required: int | None = None,
) -> State:
    """Rejected if any allowed reviewer rejected; approved once ``required`` distinct allowed reviewers
    (default: what the current version's requirement says) approved the current version (an edit's
    earlier approvals do not carry over); else pending or expired."""
    current = Standing(decisions, versions or []).current(proposal)
    if required is None:
        required = (
            current.requirement.reviewers_required if current.requirement else proposal.reviewers_required
        )
    counted = [d for d in decisions if allowed is None or d.reviewer in allowed]
    if any(d.verdict is Choice.REJECT for d in counted):
        return State.REJECTED
    approvers = {
        d.reviewer
        for d in counted
        if d.verdict is Choice.APPROVE and d.version == current.n and d.fingerprint == current.fingerprint
    }
    if len(approvers) >= required:
        return State.APPROVED
    return State.EXPIRED if now > proposal.expires_at else State.PENDING
