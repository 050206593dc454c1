"""Batch review: one signed digest link per reviewer lists what waits for them.

The digest link is signed like a proposal link, with the fixed id ``digest`` and a digest of the
reviewer's id, so it can only list; every item links to its own page and is decided on its own POST.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence

from lockgate.approvals.decisions import DecisionStore, State, current_state
from lockgate.approvals.desk import LinkSigner
from lockgate.approvals.links import LinkInvalid, new_claims, sign_link, verify_link
from lockgate.approvals.pages import DigestItem, Page, digest_page, outcome_page
from lockgate.approvals.proposals import ProposalStore
from lockgate.clock import Clock
from lockgate.config import ApprovalsConfig, Reviewer

DIGEST_ID = "digest"
DIGEST_TTL_SECONDS = 24 * 3_600
LOOKBACK_SECONDS = 7 * 86_400


def reviewer_fingerprint(reviewer: str) -> str:
    """What a digest link is bound to: the reviewer it lists for."""
    return hashlib.sha256(f"digest\n{reviewer}".encode()).hexdigest()


class ReviewDigest:
    """Signs digest links and renders the list of proposals waiting for one reviewer."""

    def __init__(
        self,
        *,
        proposals: ProposalStore,
        decisions: DecisionStore,
        config: ApprovalsConfig,
        signer: LinkSigner,
        link_secrets: Callable[[], Sequence[bytes]],
        clock: Clock,
        base_url: str,
    ) -> None:
        self._proposals = proposals
        self._decisions = decisions
        self._config = config
        self._signer = signer
        self._secrets = link_secrets
        self._clock = clock
        self._base_url = base_url.rstrip("/")

    def link_for(self, reviewer: str) -> str:
        """The reviewer's digest link, valid for a day."""
        claims = new_claims(
            DIGEST_ID, reviewer, reviewer_fingerprint(reviewer), self._clock.now(), DIGEST_TTL_SECONDS
        )
        return f"{self._base_url}?" + sign_link(self._secrets()[0], claims)

    def page(self, query: Mapping[str, str]) -> Page:
        """GET /approvals?…: the waiting proposals this reviewer may decide. Changes nothing."""
        now = self._clock.now()
        try:
            claims = verify_link(self._secrets(), DIGEST_ID, query, now)
        except LinkInvalid as exc:
            if exc.reason == "expired":
                return outcome_page("This link has expired", "Ask for a new digest.", status=410)
            return outcome_page("This link is not valid", "Nothing is shown.", status=403)
        reviewer = next((r for r in self._config.reviewers if r.id == claims.reviewer), None)
        if reviewer is None or claims.fingerprint != reviewer_fingerprint(reviewer.id):
            return outcome_page("This link is not valid", "Nothing is shown.", status=403)
        return digest_page(reviewer.name, self.items_for(reviewer), int(now))

    def items_for(self, reviewer: Reviewer) -> list[DigestItem]:
        """What waits for this reviewer now (pending, not yet decided by them), soonest deadline first."""
        now = self._clock.now()
        items = []
        for proposal in self._proposals.created_since(int(now) - LOOKBACK_SECONDS):
            if reviewer.id not in {r.id for r in self._config.reviewers_for(proposal.tool)}:
                continue
            decisions = self._decisions.for_approval(proposal.approval_id)
            if current_state(self._config, proposal, decisions, now) is not State.PENDING:
                continue
            if any(d.reviewer == reviewer.id for d in decisions):
                continue
            link = self._signer.links_for(proposal).get(reviewer.id)
            if link:
                items.append(DigestItem(proposal.summary, "; ".join(proposal.why), proposal.expires_at, link))
        items.sort(key=lambda item: item.expires_at)
        return items
