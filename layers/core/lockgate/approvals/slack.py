"""Approving in Slack: the notifier posts each proposal with buttons; a click decides as a reviewer.

``SlackChannel`` (notifier; reads the bot token) posts one message per proposal in the configured
channel. ``SlackDesk`` (approval callback; reads the signing secret) takes Slack's interaction
request: the signature is checked on the raw body before anything is parsed, the clicking Slack
user is mapped to a reviewer, and the decision goes through the same ``DecisionRecorder`` as a
link's form (roles, two people, one decision each, expiry, unchanged arguments). The outcome
replaces the message; a refusal is told only to the person who clicked, and writes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from lockgate.approvals.decisions import DecisionOutcome, DecisionRecorder, DecisionStore
from lockgate.approvals.proposals import Proposal, ProposalStore
from lockgate.approvals.slack_api import ResponseUrl, SlackWebApi, ephemeral
from lockgate.approvals.slack_messages import (
    approved_line,
    fallback_text,
    outcome_blocks,
    proposal_blocks,
    rejected_line,
)
from lockgate.approvals.slack_payload import MAX_BODY_BYTES, SlackClick, parse_click
from lockgate.clock import Clock
from lockgate.config import ApprovalsConfig, Reviewer, SlackApprovals, SourceConfig
from lockgate.errors import ConfigError, InvalidSignature, SecretUnavailable, StoreUnavailable
from lockgate.http import HttpResponse, json_response
from lockgate.telemetry import Log, Metrics
from lockgate.webhooks.schemes import SlackScheme

NOT_A_REVIEWER = (
    "You are not set up as a Lockgate reviewer, so nothing was recorded. "
    "An admin can add your Slack user id as slack_user under [[approvals.reviewers]] in lockgate.toml."
)
CANNOT_DECIDE = "This request can no longer be decided here; nothing was recorded."
TRY_AGAIN = "Lockgate could not record that just now; nothing was recorded. Please try again in a minute."
_SETTLED_REPLIES = {
    DecisionOutcome.ALREADY_DECIDED: "You have already decided this one; your first decision stands.",
    DecisionOutcome.ALREADY_APPROVED: "This was already approved; nothing more is needed.",
    DecisionOutcome.ALREADY_REJECTED: "This was already rejected; it will not happen.",
    DecisionOutcome.EXPIRED: "This request has expired: nobody decided in time, and it will not happen.",
}


class SlackChannel:
    """Posts one interactive message per proposal in the configured channel (no links: buttons)."""

    name = "slack-app"
    shared = True  # one message per proposal, not one per reviewer

    def __init__(self, settings: SlackApprovals, api: SlackWebApi, config: ApprovalsConfig) -> None:
        self._settings = settings
        self._api = api
        self._config = config

    def send(self, reviewer: Reviewer | None, proposal: Proposal, link: str | None) -> None:
        """Post the proposal with Approve / Reject buttons; raise so the stream retries on failure."""
        blocks = proposal_blocks(proposal, self._config.reviewers_for(proposal.tool))
        self._api.post_message(self._settings.channel, fallback_text(proposal), blocks)


class SlackDesk:
    """Slack's interaction requests: verified, mapped to a reviewer, decided like a link's form."""

    def __init__(  # noqa: PLR0913 - the desk's collaborators, injected
        self,
        *,
        settings: SlackApprovals,
        config: ApprovalsConfig,
        proposals: ProposalStore,
        decisions: DecisionStore,
        recorder: DecisionRecorder,
        signing_secrets: Callable[[], Sequence[str]],
        responses: ResponseUrl,
        clock: Clock,
        log: Log,
        metrics: Metrics,
    ) -> None:
        self._config = config
        self._proposals = proposals
        self._decisions = decisions
        self._recorder = recorder
        self._secrets = signing_secrets
        self._responses = responses
        self._clock = clock
        self._log = log
        self._metrics = metrics
        self._scheme = SlackScheme(
            SourceConfig(
                name="slack-approvals",
                scheme="slack",
                secrets=(settings.signing_secret,),
                tolerance_seconds=settings.tolerance_seconds,
            )
        )

    def handle(self, body: bytes, headers: Mapping[str, str]) -> HttpResponse:
        """One interaction request (``headers`` lower-case): 200 once answered, a neutral 4xx/503 if not."""
        if len(body) > MAX_BODY_BYTES:
            return self._refused(413, "body", "over the size limit")
        try:
            self._scheme.verify(body, headers, self._secrets(), self._clock.now())
        except InvalidSignature as exc:
            return self._refused(401, "signature", exc.reason)
        except (ConfigError, SecretUnavailable) as exc:
            self._log.error("slack signing secret unavailable", extra={"error": type(exc).__name__})
            return json_response(503, {"error": "temporarily unavailable"})
        click = parse_click(body, headers.get("content-type", ""))
        if click is None:
            return self._refused(400, "payload", "not a click on a Lockgate button")
        if not self._responses.allows(click.response_url):
            return self._refused(400, "response_url", "not under Slack's response host")
        try:
            reply = self._decide(click)
        except StoreUnavailable as exc:
            self._log.warning("slack decision not recorded", extra={"error": str(exc)[:80]})
            reply = ephemeral(TRY_AGAIN)
        self._answer(click, reply)
        return HttpResponse(200, "")

    def _decide(self, click: SlackClick) -> dict[str, Any]:
        """The reply to one click: the replaced message when a decision was recorded, else ephemeral."""
        reviewer = self._config.slack_reviewer(click.user)
        if reviewer is None:
            self._count_refusal("unknown slack user", click)
            return ephemeral(NOT_A_REVIEWER)
        proposal = self._proposals.get(click.approval_id)
        if proposal is None or proposal.fingerprint != click.fingerprint:
            self._count_refusal("unknown proposal or changed arguments", click)
            return ephemeral(CANNOT_DECIDE)
        if self._recorder.reviewer(proposal.tool, reviewer.id) is None:
            self._count_refusal("reviewer without the role", click)
            roles = ", ".join(self._config.for_tool(proposal.tool).roles) or "a reviewer's"
            return ephemeral(
                f"You may not decide this request: it needs the {roles} role. Nothing was recorded."
            )
        outcome = self._recorder.record(proposal, reviewer.id, click.choice, "slack")
        if not outcome.recorded:
            return ephemeral(_SETTLED_REPLIES.get(outcome, CANNOT_DECIDE))
        return self._updated_message(proposal, outcome)

    def _updated_message(self, proposal: Proposal, outcome: DecisionOutcome) -> dict[str, Any]:
        """The message as everyone in the channel now sees it."""
        decisions = self._decisions.for_approval(proposal.approval_id)
        reviewers = self._config.reviewers_for(proposal.tool)
        if outcome is DecisionOutcome.AWAITING:
            blocks = proposal_blocks(proposal, reviewers, decisions)
            text = fallback_text(proposal)
        else:
            approved = outcome is DecisionOutcome.APPROVED
            text = approved_line(decisions) if approved else rejected_line(decisions)
            blocks = outcome_blocks(proposal, reviewers, text)
        return {"replace_original": True, "text": text, "blocks": blocks}

    def _answer(self, click: SlackClick, reply: Mapping[str, Any]) -> None:
        """Post the reply; a failure leaves the decision as recorded (the message is only a view)."""
        try:
            self._responses.send(click.response_url, reply)
        except (OSError, ValueError) as exc:
            self._metrics.add_metric(name="SlackResponseFailed", unit="Count", value=1)
            self._log.warning("slack response failed", extra={"error": type(exc).__name__})

    def _count_refusal(self, reason: str, click: SlackClick) -> None:
        self._metrics.add_metric(name="SlackDecisionRefused", unit="Count", value=1)
        self._log.warning(
            "slack decision refused",
            extra={"reason": reason, "slack_user": click.user, "approval": click.approval_id[:40]},
        )

    def _refused(self, status: int, check: str, reason: str) -> HttpResponse:
        """The same neutral answer for every failed check; the reason only in the log."""
        self._metrics.add_metric(name="SlackInteractionRefused", unit="Count", value=1)
        self._log.warning("slack interaction refused", extra={"check": check, "reason": reason})
        return json_response(status, {"error": "request refused"})
