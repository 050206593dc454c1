"""What an operator sees of the approval queue: each proposal with its decisions and its state."""

from __future__ import annotations

from dataclasses import dataclass, field

from lockgate.approvals.decisions import DecisionRecord, DecisionStore, State, current_state
from lockgate.approvals.eligibility import eligible_reviewers, requirement_of
from lockgate.approvals.proposals import Proposal, ProposalStore
from lockgate.approvals.standing import Current, Standing, summary_of
from lockgate.approvals.versions import Version
from lockgate.clock import Clock
from lockgate.config import ApprovalsConfig
from lockgate.config.rules import Requirement


@dataclass(frozen=True)
class ProposalStatus:
    """A stored proposal, the decisions on it so far, and where it stands now."""

    proposal: Proposal
    decisions: tuple[DecisionRecord, ...]
    state: State
    versions: tuple[Version, ...] = ()  # reviewers' edits, oldest first
    requirement: Requirement = field(default_factory=Requirement)  # what the current version needs
    eligible: tuple[str, ...] = ()  # who may decide the current version now

    @property
    def summary(self) -> str:
        """The one line for the version that would run (the current one)."""
        return summary_of(self.proposal, self.current)

    @property
    def current(self) -> Current:
        """The version reviewers decide now (the last edit, or the proposal as made)."""
        return Standing(list(self.decisions), list(self.versions)).current(self.proposal)


class ReviewQueue:
    """Reads proposals for `lockgate approvals list|show`; it decides nothing."""

    def __init__(
        self, proposals: ProposalStore, decisions: DecisionStore, config: ApprovalsConfig, clock: Clock
    ) -> None:
        self._proposals = proposals
        self._decisions = decisions
        self._config = config
        self._clock = clock

    def status(self, approval_id: str) -> ProposalStatus | None:
        """One proposal's status, or None for an unknown id."""
        proposal = self._proposals.get(approval_id)
        return None if proposal is None else self._status(proposal)

    def listing(self, *, include_settled: bool = False) -> list[ProposalStatus]:
        """Pending proposals (or every stored one), newest first."""
        now = int(self._clock.now())
        proposals = self._proposals.created_since(0)
        if not include_settled:  # an expired proposal cannot be pending: skip its decisions query
            proposals = [p for p in proposals if p.expires_at >= now]
        statuses = [self._status(p) for p in proposals]
        if not include_settled:
            statuses = [s for s in statuses if s.state is State.PENDING]
        return sorted(statuses, key=lambda s: (s.proposal.created_at, s.proposal.approval_id), reverse=True)

    def _status(self, proposal: Proposal) -> ProposalStatus:
        standing = self._decisions.standing(proposal.approval_id)
        now = self._clock.now()
        state = current_state(self._config, proposal, standing, now)
        current = standing.current(proposal)
        return ProposalStatus(
            proposal,
            tuple(standing.decisions),
            state,
            tuple(standing.versions),
            requirement_of(self._config, proposal, current),
            tuple(r.id for r in eligible_reviewers(self._config, proposal, current)),
        )
