"""Batch review: one signed digest link per reviewer lists what waits for them, and decides nothing.

The digest link is signed like a proposal link, with the fixed id ``digest`` and a digest of the
reviewer's id, and expires with the digest (when the last proposal it listed expires, at most a
day). Its page mints no decision links: each proposal is decided only from its own signed link,
which the page can have sent again to the reviewer privately (``lockgate.approvals.reissue``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence

from lockgate.approvals.decisions import DecisionStore, State, current_state
from lockgate.approvals.desk import LinkSigner
from lockgate.approvals.eligibility import allowed_ids
from lockgate.approvals.links import (
    LinkClaims,
    LinkInvalid,
    form_token,
    new_claims,
    sign_link,
    verify_form_token,
    verify_link,
)
from lockgate.approvals.pages import FORM_TOKEN_FIELD, LINK_FIELDS, DigestItem, Page, digest_page
from lockgate.approvals.proposals import Proposal, ProposalStore
from lockgate.approvals.refusal import unusable_page
from lockgate.clock import Clock
from lockgate.config import ApprovalsConfig, Reviewer
from lockgate.telemetry import Log, Metrics

DIGEST_ID = "digest"
DIGEST_TTL_SECONDS = 24 * 3_600
MIN_TTL_SECONDS = 60
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
        log: Log,
        metrics: Metrics,
    ) -> None:
        self._proposals = proposals
        self._decisions = decisions
        self._config = config
        self._signer = signer
        self._secrets = link_secrets
        self._clock = clock
        self._base_url = base_url.rstrip("/")
        self._log = log
        self._metrics = metrics

    def link_for(self, reviewer: str, items: Sequence[DigestItem]) -> str:
        """The reviewer's digest link; it expires with the digest: when the last of ``items`` does."""
        now = int(self._clock.now())
        until = max((item.expires_at for item in items), default=now)
        ttl = max(MIN_TTL_SECONDS, min(DIGEST_TTL_SECONDS, until - now))
        claims = new_claims(DIGEST_ID, reviewer, reviewer_fingerprint(reviewer), now, ttl)
        return f"{self._base_url}?" + sign_link(self._secrets()[0], claims)

    def page(self, query: Mapping[str, str]) -> Page:
        """GET /approvals?…: what waits for this reviewer, with no decision links. Changes nothing."""
        checked = self._verify(query)
        if isinstance(checked, Page):
            return checked
        reviewer, claims = checked
        items = [_item(proposal, "") for proposal in self.waiting(reviewer)]
        link = {k: v for k, v in query.items() if k in LINK_FIELDS}
        fields = {**link, FORM_TOKEN_FIELD: form_token(self._secrets()[0], claims)}
        return digest_page(reviewer.name, items, int(self._clock.now()), (self._base_url, fields))

    def verify_form(self, form: Mapping[str, str]) -> Reviewer | Page:
        """The reviewer a digest page's POST speaks for (its link and form token), or the neutral page."""
        checked = self._verify({k: form.get(k, "") for k in LINK_FIELDS})
        if isinstance(checked, Page):
            return checked
        reviewer, claims = checked
        try:
            verify_form_token(self._secrets(), claims, form.get(FORM_TOKEN_FIELD, ""))
        except LinkInvalid as exc:
            return self.refused("form token", exc.reason)
        return reviewer

    def refused(self, check: str, reason: str) -> Page:
        """Log and count why; the page is the same neutral one the proposal pages show."""
        self._metrics.add_metric(name="ApprovalLinkRefused", unit="Count", value=1)
        self._log.warning(
            "approval request refused", extra={"check": check, "reason": reason, "approval": "digest"}
        )
        return unusable_page()

    def items_for(self, reviewer: Reviewer) -> list[DigestItem]:
        """What waits for this reviewer, each with their own link: for the private digest message only."""
        return [
            _item(proposal, self._signer.link_for(proposal, reviewer.id))
            for proposal in self.waiting(reviewer)
        ]

    def waiting(self, reviewer: Reviewer) -> list[Proposal]:
        """Pending proposals this reviewer may decide and has not, soonest deadline first."""
        now = self._clock.now()
        found = []
        for proposal in self._proposals.created_since(int(now) - LOOKBACK_SECONDS):
            standing = self._decisions.standing(proposal.approval_id)
            if reviewer.id not in allowed_ids(self._config, proposal, standing):
                continue
            if current_state(self._config, proposal, standing, now) is not State.PENDING:
                continue
            if not standing.decided(reviewer.id, standing.current(proposal).n):
                found.append(proposal)
        found.sort(key=lambda proposal: proposal.expires_at)
        return found

    def _verify(self, query: Mapping[str, str]) -> tuple[Reviewer, LinkClaims] | Page:
        try:
            claims = verify_link(self._secrets(), DIGEST_ID, query, self._clock.now())
        except LinkInvalid as exc:
            return self.refused("digest link", exc.reason)
        reviewer = next((r for r in self._config.reviewers if r.id == claims.reviewer), None)
        if reviewer is None or claims.fingerprint != reviewer_fingerprint(reviewer.id):
            return self.refused("digest link", "not a digest link for a configured reviewer")
        return reviewer, claims


def _item(proposal: Proposal, link: str) -> DigestItem:
    return DigestItem(
        proposal.summary, "; ".join(proposal.why), proposal.expires_at, link, proposal.approval_id
    )
