"""Approving in Slack: the notifier posts each proposal with buttons; a click decides as a reviewer.

``SlackChannel`` (notifier; reads the bot token) hands each proposal to ``SlackPosts``: one message
in the configured channel, posted once, updated whoever decides. ``SlackDesk`` (approval callback;
reads the signing secret) takes Slack's interaction request: the signature is checked on the raw
body before anything is parsed, the click must come from the pinned workspace (and organisation),
the clicking Slack user is mapped to a reviewer, and the decision goes through the same
``DecisionRecorder`` as a link's form (roles, two people, one decision each, expiry, unchanged
arguments). The clicker alone is told what happened (the message itself is the notifier's to
change, from the Decisions stream). A refused click is kept (``RefusalLog``) and told, neutrally,
only to the person who clicked.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from lockgate.approvals.decisions import DecisionOutcome, DecisionRecorder, DecisionStore
from lockgate.approvals.proposals import Proposal, ProposalStore
from lockgate.approvals.refusals import RefusalLog, Why
from lockgate.approvals.slack_api import ResponseUrl, ephemeral
from lockgate.approvals.slack_payload import MAX_BODY_BYTES, SlackClick, parse_click
from lockgate.approvals.slack_posts import SlackPosts
from lockgate.clock import Clock
from lockgate.config import ApprovalsConfig, Reviewer, SlackApprovals, SourceConfig
from lockgate.errors import ConfigError, InvalidSignature, SecretUnavailable, StoreUnavailable
from lockgate.http import HttpResponse, json_response
from lockgate.telemetry import Log, Metrics
from lockgate.webhooks.schemes import SlackScheme

# The one answer to every click that may not decide: it says nothing of how Lockgate is set up.
CANNOT_DECIDE = "You can't decide this request; nothing was recorded."
TRY_AGAIN = "Lockgate could not record that just now; nothing was recorded. Please try again in a minute."
# To a reviewer allowed to decide it (who would see the same on its page):
_SETTLED_REPLIES = {
    DecisionOutcome.ALREADY_DECIDED: "You have already decided this one; your first decision stands.",
    DecisionOutcome.ALREADY_APPROVED: "This was already approved; nothing more is needed.",
    DecisionOutcome.ALREADY_REJECTED: "This was already rejected; it will not happen.",
    DecisionOutcome.EXPIRED: "This request has expired: nobody decided in time, and it will not happen.",
    DecisionOutcome.EDITED: "This request was edited since this message showed it; nothing was recorded. "
    "The message now shows the edited version: look again.",
}
_RECORDED_REPLIES = {
    DecisionOutcome.APPROVED: "Recorded: you approved it, and it runs once.",
    DecisionOutcome.AWAITING: "Recorded: your approval. Another reviewer must also approve before it runs.",
    DecisionOutcome.REJECTED: "Recorded: you rejected it; it will not happen.",
}
_WHY = {
    DecisionOutcome.ALREADY_DECIDED: Why.REPLAY,
    DecisionOutcome.ALREADY_APPROVED: Why.SETTLED,
    DecisionOutcome.ALREADY_REJECTED: Why.SETTLED,
    DecisionOutcome.EXPIRED: Why.EXPIRED,
    DecisionOutcome.CHANGED: Why.CHANGED,
    DecisionOutcome.EDITED: Why.EDITED,
    DecisionOutcome.NOT_ALLOWED: Why.NO_ROLE,
}


class SlackChannel:
    """Posts one interactive message per proposal in the configured channel (no links: buttons)."""

    name = "slack-app"
    shared = True  # one message per proposal, not one per reviewer

    def __init__(self, posts: SlackPosts) -> None:
        self._posts = posts

    def send(self, reviewer: Reviewer | None, proposal: Proposal, link: str | None) -> None:
        """Post the proposal with Approve / Reject buttons (once); raise so the stream retries on failure."""
        self._posts.post(proposal)


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
        refusals: RefusalLog,
        signing_secrets: Callable[[], Sequence[str]],
        responses: ResponseUrl,
        clock: Clock,
        log: Log,
        metrics: Metrics,
    ) -> None:
        self._settings = settings
        self._config = config
        self._proposals = proposals
        self._decisions = decisions
        self._recorder = recorder
        self._refusals = refusals
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
        # From here on Slack vouches for the request: a refusal is kept, with who and which request.
        click = parse_click(body, headers.get("content-type", ""))
        if click is None:
            self._refusals.record(None, "slack", "-", Why.NOT_A_CLICK)
            return self._refused(400, "payload", "not a click on a Lockgate button")
        if not self._responses.allows(click.response_url):
            self._refusals.record(click.approval_id, "slack", click.who, Why.RESPONSE_URL)
            return self._refused(400, "response_url", "not under Slack's response host")
        try:
            reply = self._decide(click)
        except StoreUnavailable as exc:
            self._log.warning("slack decision not recorded", extra={"error": str(exc)[:80]})
            reply = ephemeral(TRY_AGAIN)
        self._answer(click, reply)
        return HttpResponse(200, "")

    def _decide(self, click: SlackClick) -> dict[str, Any]:
        """The clicker's answer: what their click recorded, or why not (neutrally, unless they may decide)."""
        if not click.from_workspace(self._settings.team_id, self._settings.enterprise_id):
            return self._refuse(click, Why.OTHER_WORKSPACE)  # even when the user id is a mapped one
        reviewer = self._config.slack_reviewer(click.user)
        if reviewer is None:
            return self._refuse(click, Why.NOT_A_REVIEWER)
        proposal = self._proposals.get(click.approval_id)
        if proposal is None:
            return self._refuse(click, Why.UNKNOWN_REQUEST)
        standing = self._decisions.standing(proposal.approval_id)
        if click.fingerprint not in {proposal.fingerprint, *(v.fingerprint for v in standing.versions)}:
            return self._refuse(click, Why.CHANGED)  # no version of this request was ever shown so
        if self._recorder.reviewer(proposal.tool, reviewer.id) is None:
            return self._refuse(click, Why.NO_ROLE)
        # The version the message showed: a click on one edited since decides nothing (EDITED).
        outcome = self._recorder.record(proposal, reviewer.id, click.choice, "slack", seen=click.fingerprint)
        if outcome.recorded:
            return ephemeral(_RECORDED_REPLIES[outcome])
        why = _WHY.get(outcome, Why.SETTLED)
        if why is Why.SETTLED and any(d.reviewer == reviewer.id for d in standing.decisions):
            why = Why.REPLAY  # their own click, again, on what it settled
        self._refusals.record(click.approval_id, "slack", click.who, why)
        return ephemeral(_SETTLED_REPLIES.get(outcome, CANNOT_DECIDE))

    def _refuse(self, click: SlackClick, why: Why) -> dict[str, Any]:
        """Keep the refusal; the clicker is told only that they cannot decide it."""
        self._refusals.record(click.approval_id, "slack", click.who, why)
        return ephemeral(CANNOT_DECIDE)

    def _answer(self, click: SlackClick, reply: Mapping[str, Any]) -> None:
        """Post the reply; a failure leaves the decision as recorded (the message is only a view)."""
        try:
            self._responses.send(click.response_url, reply)
        except (OSError, ValueError) as exc:
            self._metrics.add_metric(name="SlackResponseFailed", unit="Count", value=1)
            self._log.warning("slack response failed", extra={"error": type(exc).__name__})

    def _refused(self, status: int, check: str, reason: str) -> HttpResponse:
        """The same neutral answer for every failed check; the reason only in the log."""
        self._metrics.add_metric(name="SlackInteractionRefused", unit="Count", value=1)
        self._log.warning("slack interaction refused", extra={"check": check, "reason": reason})
        return json_response(status, {"error": "request refused"})
