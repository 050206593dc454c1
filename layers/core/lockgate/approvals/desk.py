"""The approval desk: what GET and POST /approvals/{id} do. GET never changes anything.

Every check is server-side: the link's signature and expiry, the reviewer is allowed for this
tool, the proposal exists and is still pending and unexpired, the argument fingerprint is unchanged,
and (POST) the form token belongs to this link. One decision per reviewer by conditional write.
The decision itself goes through ``DecisionRecorder``, which `lockgate approvals approve` uses too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from lockgate.actions.tools import fingerprint
from lockgate.approvals.checking import CheckVersion
from lockgate.approvals.decided_page import decided_page
from lockgate.approvals.decision_pages import SETTLED_STATUS, decision_page
from lockgate.approvals.decisions import (
    Choice,
    DecisionOutcome,
    DecisionRecorder,
    DecisionStore,
    State,
    checked_reason,
)
from lockgate.approvals.eligibility import eligible_reviewers
from lockgate.approvals.links import (
    LinkClaims,
    LinkInvalid,
    form_token,
    new_claims,
    sign_link,
    verify_form_token,
    verify_link,
)
from lockgate.approvals.outcome import ActionOutcomes
from lockgate.approvals.pages import (
    DECISION_FIELD,
    FORM_TOKEN_FIELD,
    LINK_FIELDS,
    REASON_FIELD,
    SEEN_FIELD,
    Page,
    outcome_page,
)
from lockgate.approvals.proposals import Proposal, ProposalStore
from lockgate.approvals.refusal import cross_site_reason, unusable_page
from lockgate.approvals.refusals import RefusalLog, Why, why_refused
from lockgate.approvals.review_page import confirmation_page
from lockgate.approvals.standing import Standing
from lockgate.approvals.versions import EditRefused, EditUnchecked
from lockgate.approvals.views import form_edit, proposal_view
from lockgate.clock import Clock
from lockgate.config import ApprovalsConfig, Reviewer
from lockgate.inbox.queue import InboxQueue
from lockgate.inbox.store import InboxStore
from lockgate.telemetry import Log, Metrics

LINK_TTL_SECONDS = 24 * 3_600
EDIT_CHOICE = "edit"  # the form's third button: approve the changed fields as a new version


class LinkSigner:
    """Makes one signed, expiring link per allowed reviewer (the notifier and the CLI use it)."""

    def __init__(
        self,
        config: ApprovalsConfig,
        link_secrets: Callable[[], Sequence[bytes]],
        clock: Clock,
        base_url: str,
    ) -> None:
        self._config = config
        self._secrets = link_secrets
        self._clock = clock
        self._base_url = base_url.rstrip("/")

    @property
    def base_url(self) -> str:
        """Where links point (relative when the function cannot know its own public URL)."""
        return self._base_url

    def links_for(self, proposal: Proposal, base_url: str | None = None) -> dict[str, str]:
        """Reviewer id → link under ``base_url`` (default: the configured one), expiring with the proposal:
        one for each reviewer who may decide it as made (and its escalation group, once escalated)."""
        return {
            reviewer.id: self.link_for(proposal, reviewer.id, base_url)
            for reviewer in eligible_reviewers(self._config, proposal, Standing().current(proposal))
        }

    def link_for(self, proposal: Proposal, reviewer_id: str, base_url: str | None = None) -> str:
        """One reviewer's signed link under ``base_url`` (default: the configured one)."""
        now = int(self._clock.now())
        ttl = max(60, min(LINK_TTL_SECONDS, proposal.expires_at - now))
        secret = self._secrets()[0]
        base = self._base_url if base_url is None else base_url.rstrip("/")
        claims = new_claims(proposal.approval_id, reviewer_id, proposal.fingerprint, now, ttl)
        return f"{base}/{proposal.approval_id}?" + sign_link(secret, claims)


class ApprovalDesk:
    """Signs links for reviewers, renders the confirmation page, records decisions."""

    def __init__(
        self,
        *,
        proposals: ProposalStore,
        decisions: DecisionStore,
        config: ApprovalsConfig,
        link_secrets: Callable[[], Sequence[bytes]],
        inbox: InboxStore,
        queue: InboxQueue,
        clock: Clock,
        log: Log,
        metrics: Metrics,
        base_url: str,
        outcomes: ActionOutcomes | None = None,
        refusals: RefusalLog | None = None,
        checks: CheckVersion | None = None,
    ) -> None:
        self._proposals = proposals
        self._decisions = decisions
        self._config = config
        self._outcomes = outcomes  # the ledger's state of an approved action (read-only); None: not shown
        # A decision refused after the link verified (settled, expired, a repeat, edited since) is
        # kept as a row; a link that fails its checks is not attributable and only logged (refusals.py).
        self.refusals = refusals
        self._secrets = link_secrets
        self._clock = clock
        self._log = log
        self._metrics = metrics
        self._base_url = base_url.rstrip("/")
        self.signer = LinkSigner(config, link_secrets, clock, base_url)
        self.recorder = DecisionRecorder(
            decisions=decisions,
            config=config,
            inbox=inbox,
            queue=queue,
            clock=clock,
            log=log,
            metrics=metrics,
            checks=checks,  # the worker's check of an edited version, before it is recorded
        )

    def links_for(self, proposal: Proposal) -> dict[str, str]:
        """Reviewer id → signed link."""
        return self.signer.links_for(proposal)

    # -- GET ---------------------------------------------------------------------------------

    def show(self, approval_id: str, query: Mapping[str, str]) -> Page:
        """The confirmation page for a valid link. Changes nothing."""
        checked = self._check(approval_id, query)
        if isinstance(checked, Page):
            return checked
        proposal, claims, reviewer, standing = checked
        state = self.recorder.state(proposal, standing)
        view = proposal_view(proposal, standing, self._config, self._clock.now())
        if state is not State.PENDING:
            # The version that ran, under the key the worker's check gave it (an older edit has none:
            # rather than "not run yet" from the original's key, the page says it cannot tell).
            op_key = standing.current(proposal).op_key
            known = self._outcomes is not None and state is State.APPROVED and op_key
            outcome = self._outcomes.of(proposal, op_key) if known and self._outcomes else None
            return decided_page(view, state, outcome, status=SETTLED_STATUS[state])
        secret = self._secrets()[0]
        page = confirmation_page(
            view,
            reviewer.id,
            f"{self._base_url}/{approval_id}",
            form_token(secret, claims),
            sign_link(secret, claims),
            int(self._clock.now()),
        )
        # Decided already (another reviewer must still approve): the page shows their decision, no form.
        decided = standing.decided(reviewer.id, standing.current(proposal).n)
        return replace(page, status=409) if decided else page

    # -- POST --------------------------------------------------------------------------------

    def decide(
        self,
        approval_id: str,
        query: Mapping[str, str],
        form: Mapping[str, str],
        headers: Mapping[str, str] | None = None,
    ) -> Page:
        """Record one reviewer's decision; when it settles the proposal, tell the worker.

        ``headers`` (lower-case names, with ``host``): a post another site sent is refused first.
        """
        cross_site = cross_site_reason(headers or {})
        if cross_site is not None:
            return self._refused("origin", cross_site, approval_id)
        link = {k: form.get(k, query.get(k, "")) for k in LINK_FIELDS}
        checked = self._check(approval_id, link)
        if isinstance(checked, Page):
            return checked
        proposal, claims, reviewer, standing = checked
        try:
            verify_form_token(self._secrets(), claims, form.get(FORM_TOKEN_FIELD, ""))
        except LinkInvalid as exc:
            return self._refused("form token", exc.reason, approval_id)
        choice = form.get(DECISION_FIELD, "")
        if choice not in (Choice.APPROVE.value, Choice.REJECT.value, EDIT_CHOICE):
            return self._refused("form", "no decision chosen", approval_id)
        reason = checked_reason(form.get(REASON_FIELD, ""))
        if reason is None:  # the textarea's maxlength stops a browser: a crafted post
            return self._refused("form", "reason too long", approval_id)
        seen = form.get(SEEN_FIELD) or proposal.fingerprint  # a form from before edits existed
        edit = form_edit(form, proposal, standing) if choice == EDIT_CHOICE else None
        verdict = Choice.APPROVE if choice == EDIT_CHOICE else Choice(choice)
        try:
            outcome = self.recorder.record(
                proposal, reviewer.id, verdict, "link", reason=reason, seen=seen, edit=edit
            )
        except EditRefused as exc:
            if self.refusals is not None:  # kept: what the worker would refuse is refused here, visibly
                self.refusals.record(approval_id, "link", reviewer.id, Why.EDIT_REFUSED)
            title = "Not approved: the change is not allowed"
            if isinstance(exc, EditUnchecked):
                title = "Not approved yet: the change could not be checked"
            return outcome_page(title, f"{exc}. Nothing was recorded.", status=exc.status)
        if not outcome.recorded and self.refusals is not None:  # a verified link's refused decision: kept
            self.refusals.record(approval_id, "link", reviewer.id, why_refused(outcome))
        if outcome in (DecisionOutcome.CHANGED, DecisionOutcome.NOT_ALLOWED):  # changed since _check
            return self._refused("decision", outcome.value, approval_id)
        after = self._decisions.standing(approval_id) if outcome.recorded else standing
        return decision_page(outcome, proposal, after, self.recorder)

    # -- checks ------------------------------------------------------------------------------

    def _check(
        self, approval_id: str, query: Mapping[str, str]
    ) -> tuple[Proposal, LinkClaims, Reviewer, Standing] | Page:
        try:
            claims = verify_link(self._secrets(), approval_id, query, self._clock.now())
        except LinkInvalid as exc:
            return self._refused("link", exc.reason, approval_id)
        proposal = self._proposals.get(approval_id)
        if proposal is None:
            return self._refused("proposal", "unknown approval id", approval_id)
        if claims.fingerprint != proposal.fingerprint or fingerprint(proposal.args) != proposal.fingerprint:
            return self._refused("fingerprint", "arguments changed", approval_id)
        standing = self._decisions.standing(approval_id)
        reviewer = self.recorder.reviewer(proposal, claims.reviewer, standing)
        if reviewer is None:
            return self._refused("reviewer", "not allowed to decide this version", approval_id)
        return proposal, claims, reviewer, standing

    def _refused(self, check: str, reason: str, approval_id: str) -> Page:
        """Log and count the specific reason; the page is the same for every check."""
        self._metrics.add_metric(name="ApprovalLinkRefused", unit="Count", value=1)
        self._log.warning(
            "approval request refused", extra={"check": check, "reason": reason, "approval": approval_id[:40]}
        )
        return unusable_page()
