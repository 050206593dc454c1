"""The approval desk: what GET and POST /approvals/{id} do. GET never changes anything.

Every check is server-side: the link's signature and expiry, the reviewer is allowed for this
tool, the proposal exists and is still pending and unexpired, the argument digest is unchanged,
and (POST) the form token belongs to this link. One decision per reviewer by conditional write.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from lockgate.agent.tools import fingerprint
from lockgate.approvals.decisions import DecisionRecord, DecisionStore, State, Verdict, state_of
from lockgate.approvals.links import (
    LinkClaims,
    LinkInvalid,
    form_token,
    new_claims,
    sign_link,
    verify_form_token,
    verify_link,
)
from lockgate.approvals.pages import (
    DECISION_FIELD,
    FORM_TOKEN_FIELD,
    LINK_FIELDS,
    Page,
    ProposalView,
    confirmation_page,
    outcome_page,
)
from lockgate.approvals.proposals import Proposal, ProposalStore
from lockgate.clock import Clock
from lockgate.config import ApprovalsConfig, Reviewer
from lockgate.errors import QueueUnavailable
from lockgate.inbox.models import Delivery, Status, delivery_key
from lockgate.inbox.queue import InboxQueue
from lockgate.inbox.store import InboxStore
from lockgate.telemetry import Log, Metrics

LINK_TTL_SECONDS = 24 * 3_600
DAY = 86_400


def decision_key(approval_id: str, state: State) -> str:
    """The inbox event id for a decided proposal: a second POST that completes it is a duplicate."""
    return f"{approval_id}#{state.value}"


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

    def links_for(self, proposal: Proposal) -> dict[str, str]:
        """Reviewer id → link; each expires with the proposal (at most a day)."""
        now = int(self._clock.now())
        ttl = max(60, min(LINK_TTL_SECONDS, proposal.expires_at - now))
        secret = self._secrets()[0]
        return {
            reviewer.id: f"{self._base_url}/{proposal.approval_id}?"
            + sign_link(secret, new_claims(proposal.approval_id, reviewer.id, proposal.digest, now, ttl))
            for reviewer in self._config.reviewers_for(proposal.tool)
        }


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
    ) -> None:
        self._proposals = proposals
        self._decisions = decisions
        self._config = config
        self._secrets = link_secrets
        self._inbox = inbox
        self._queue = queue
        self._clock = clock
        self._log = log
        self._metrics = metrics
        self._base_url = base_url.rstrip("/")
        self.signer = LinkSigner(config, link_secrets, clock, base_url)

    def links_for(self, proposal: Proposal) -> dict[str, str]:
        """Reviewer id → signed link."""
        return self.signer.links_for(proposal)

    # -- GET ---------------------------------------------------------------------------------

    def show(self, approval_id: str, query: Mapping[str, str]) -> Page:
        """The confirmation page for a valid link. Changes nothing."""
        checked = self._check(approval_id, query)
        if isinstance(checked, Page):
            return checked
        proposal, claims, reviewer = checked
        decisions = self._decisions.for_approval(approval_id)
        state = self._state(proposal, decisions)
        if state is not State.PENDING:
            return _settled_page(state)
        if any(d.reviewer == reviewer.id for d in decisions):
            return outcome_page(
                "You have already decided", "Your decision is recorded; it cannot be changed.", status=409
            )
        secret = self._secrets()[0]
        return confirmation_page(
            _view(proposal, decisions),
            reviewer.id,
            f"{self._base_url}/{approval_id}",
            form_token(secret, claims),
            sign_link(secret, claims),
            int(self._clock.now()),
        )

    # -- POST --------------------------------------------------------------------------------

    def decide(self, approval_id: str, query: Mapping[str, str], form: Mapping[str, str]) -> Page:
        """Record one reviewer's decision; when it settles the proposal, tell the worker."""
        link = {k: form.get(k, query.get(k, "")) for k in LINK_FIELDS}
        checked = self._check(approval_id, link)
        if isinstance(checked, Page):
            return checked
        proposal, claims, reviewer = checked
        try:
            verify_form_token(self._secrets(), claims, form.get(FORM_TOKEN_FIELD, ""))
        except LinkInvalid as exc:
            self._refused("form token", exc.reason, approval_id)
            return outcome_page(
                "This form is not valid", "Open the link from your notification again.", status=403
            )
        choice = form.get(DECISION_FIELD, "")
        if choice not in (Verdict.APPROVE.value, Verdict.REJECT.value):
            return outcome_page("Choose Approve or Reject", "Nothing was decided.", status=400)
        decisions = self._decisions.for_approval(approval_id)
        state = self._state(proposal, decisions)
        if state is not State.PENDING:
            return _settled_page(state)
        now = int(self._clock.now())
        record = DecisionRecord(approval_id, reviewer.id, Verdict(choice), now, proposal.digest)
        if not self._decisions.record(record):
            return outcome_page("You have already decided", "Your first decision stands.", status=409)
        self._metrics.add_metric(name=f"Approval_{choice}", unit="Count", value=1)
        self._log.info(
            "approval decided", extra={"approval": approval_id, "reviewer": reviewer.id, "decision": choice}
        )
        state = self._state(proposal, self._decisions.for_approval(approval_id))
        if state in (State.APPROVED, State.REJECTED):
            self._enqueue(proposal, state, now)
        if state is State.APPROVED:
            return outcome_page(
                "Approved", f"{proposal.summary} — it will run once, within the hour.", status=200
            )
        if state is State.REJECTED:
            return outcome_page("Rejected", f"{proposal.summary} — it will not happen.", status=200)
        return outcome_page(
            "Approval recorded", "Another reviewer must also approve before it runs.", status=200
        )

    # -- checks ------------------------------------------------------------------------------

    def _check(
        self, approval_id: str, query: Mapping[str, str]
    ) -> tuple[Proposal, LinkClaims, Reviewer] | Page:
        try:
            claims = verify_link(self._secrets(), approval_id, query, self._clock.now())
        except LinkInvalid as exc:
            self._refused("link", exc.reason, approval_id)
            if exc.reason == "expired":
                return outcome_page("This link has expired", "Nothing was decided.", status=410)
            return outcome_page("This link is not valid", "Nothing was decided.", status=403)
        proposal = self._proposals.get(approval_id)
        if proposal is None:
            self._refused("proposal", "unknown approval id", approval_id)
            return outcome_page("This link is not valid", "Nothing was decided.", status=404)
        if claims.digest != proposal.digest or fingerprint(proposal.args) != proposal.digest:
            self._refused("digest", "arguments changed", approval_id)
            return outcome_page(
                "This request has changed", "Nothing was decided; ask for a new link.", status=409
            )
        reviewer = next(
            (r for r in self._config.reviewers_for(proposal.tool) if r.id == claims.reviewer), None
        )
        if reviewer is None:
            self._refused("reviewer", "not allowed for this tool", approval_id)
            return outcome_page("You are not a reviewer for this action", "Nothing was decided.", status=403)
        return proposal, claims, reviewer

    def _state(self, proposal: Proposal, decisions: list[DecisionRecord]) -> State:
        allowed = frozenset(r.id for r in self._config.reviewers_for(proposal.tool))
        return state_of(proposal, decisions, self._clock.now(), allowed)

    def _refused(self, check: str, reason: str, approval_id: str) -> None:
        self._metrics.add_metric(name="ApprovalLinkRefused", unit="Count", value=1)
        self._log.warning(
            "approval request refused", extra={"check": check, "reason": reason, "approval": approval_id[:40]}
        )

    def _enqueue(self, proposal: Proposal, state: State, now: int) -> None:
        """The decision becomes an inbox event; the worker re-checks everything before acting."""
        delivery_id = decision_key(proposal.approval_id, state)
        body = json.dumps({"approval_id": proposal.approval_id, "state": state.value}).encode()
        delivery = Delivery(
            pk=delivery_key("approval", delivery_id),
            source="approval",
            delivery_id=delivery_id,
            event_type=f"approval.{state.value}",
            status=Status.RECEIVED,
            received_at=now,
            available_at=now,
            body=body,
            body_sha256=hashlib.sha256(body).hexdigest(),
            body_bytes=len(body),
            ttl=now + 14 * DAY,
        )
        if self._inbox.put_new(delivery).created:
            try:
                self._queue.send(delivery.pk)
            except QueueUnavailable as exc:  # stored: the inbox sweep re-queues it
                self._log.error("queue send failed after a decision", extra={"error": str(exc)})


def _settled_page(state: State) -> Page:
    titles = {
        State.APPROVED: ("Already approved", "This action was approved; nothing more is needed."),
        State.REJECTED: ("Already rejected", "This action was rejected and will not happen."),
        State.EXPIRED: ("This request has expired", "Nobody decided in time; it will not happen."),
    }
    title, message = titles[state]
    return outcome_page(title, message, status=409 if state is not State.EXPIRED else 410)


def _view(proposal: Proposal, decisions: list[DecisionRecord]) -> ProposalView:
    details = [(key.replace("_", " "), _value(value)) for key, value in proposal.args.items()]
    return ProposalView(
        approval_id=proposal.approval_id,
        task=proposal.task,
        tool=proposal.tool,
        summary=proposal.summary,
        details=details,
        unverified_reason=proposal.unverified_reason,
        why_asked=list(proposal.why),
        expires_at=proposal.expires_at,
        created_at=proposal.created_at,
        reviewers_required=proposal.reviewers_required,
        decisions=[(d.reviewer, d.verdict.value, d.decided_at) for d in decisions],
    )


def _value(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)
