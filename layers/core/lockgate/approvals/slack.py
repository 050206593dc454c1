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

The Edit button passes the same checks, then opens the edit modal (``views.open``, with the bot
token); its submission passes them again and is an edit-and-approve decision through the same
recorder (``lockgate.approvals.slack_modal``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from lockgate.approvals.decisions import Choice, DecisionOutcome, DecisionRecorder, DecisionStore
from lockgate.approvals.proposals import Proposal, ProposalStore
from lockgate.approvals.refusals import RefusalLog, Why
from lockgate.approvals.slack_api import ResponseUrl, SlackApiError, SlackWebApi, ephemeral
from lockgate.approvals.slack_modal import SlackEdit, edit_view, field_errors, notice, parse_submission
from lockgate.approvals.slack_payload import MAX_BODY_BYTES, SlackActor, SlackClick, parse_click
from lockgate.approvals.slack_posts import SlackPosts
from lockgate.approvals.standing import Standing
from lockgate.approvals.versions import EditRefused, editable
from lockgate.clock import Clock
from lockgate.config import ApprovalsConfig, Reviewer, SlackApprovals, SourceConfig
from lockgate.errors import ConfigError, InvalidSignature, SecretUnavailable, StoreUnavailable
from lockgate.http import HttpResponse, json_response
from lockgate.telemetry import Log, Metrics
from lockgate.webhooks.schemes import SlackScheme

# The one answer to every click that may not decide: it says nothing of how Lockgate is set up.
CANNOT_DECIDE = "You can't decide this request; nothing was recorded."
TRY_AGAIN = "Lockgate could not record that just now; nothing was recorded. Please try again in a minute."
NOT_OPENED = "Lockgate could not open the edit form just now; nothing was recorded. Please try again."
# To a reviewer allowed to decide it (who would see the same on its page):
_SETTLED_REPLIES = {
    DecisionOutcome.ALREADY_DECIDED: "You have already decided this one; your first decision stands.",
    DecisionOutcome.ALREADY_APPROVED: "This was already approved; nothing more is needed.",
    DecisionOutcome.ALREADY_REJECTED: "This was already rejected; it will not happen.",
    DecisionOutcome.EXPIRED: "This request has expired: nobody decided in time, and it will not happen.",
    DecisionOutcome.EDITED: "This request was edited since this message showed it; nothing was recorded. "
    "The message now shows the edited version: look again.",
}
# The modal's own words where the message's would not fit: it is the form, not the message, that is old.
_MODAL_REPLIES = {
    **_SETTLED_REPLIES,
    DecisionOutcome.EDITED: "This request was edited since this form showed it; nothing was recorded. "
    "Its message now shows the edited version: look again.",
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
        """Post the proposal with its buttons (once); raise so the stream retries on failure."""
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
        views: SlackWebApi,
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
        self._views = views  # views.open, with the bot token: the Edit button's modal
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
            edit = parse_submission(body, headers.get("content-type", ""))
            if edit is not None:  # the edit modal's Approve changes: Slack shows what the body says
                return self._submit(edit)
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
        if reply is not None:
            self._answer(click, reply)
        return HttpResponse(200, "")

    def _admit(
        self, actor: SlackActor, approval_id: str, seen: str
    ) -> tuple[Reviewer, Proposal, Standing] | Why:
        """The reviewer, proposal and standing a request may decide on; else why not (to be kept)."""
        if not actor.from_workspace(self._settings.team_id, self._settings.enterprise_id):
            return Why.OTHER_WORKSPACE  # even when the user id is a mapped one
        reviewer = self._config.slack_reviewer(actor.user)
        if reviewer is None:
            return Why.NOT_A_REVIEWER
        proposal = self._proposals.get(approval_id)
        if proposal is None:
            return Why.UNKNOWN_REQUEST
        standing = self._decisions.standing(proposal.approval_id)
        if seen not in {proposal.fingerprint, *(v.fingerprint for v in standing.versions)}:
            return Why.CHANGED  # no version of this request was ever shown so
        if self._recorder.reviewer(proposal, reviewer.id, standing) is None:
            return Why.NO_ROLE
        return reviewer, proposal, standing

    def _decide(self, click: SlackClick) -> dict[str, Any] | None:
        """The clicker's answer: what their click recorded, or why not (neutrally, unless they may decide);
        None when the Edit button opened the modal."""
        admitted = self._admit(click, click.approval_id, click.fingerprint)
        if isinstance(admitted, Why):
            return self._refuse(click, click.approval_id, admitted)
        reviewer, proposal, standing = admitted
        if click.edit:
            return self._open_edit(click, reviewer, proposal, standing)
        # The version the message showed: a click on one edited since decides nothing (EDITED).
        outcome = self._recorder.record(proposal, reviewer.id, click.choice, "slack", seen=click.fingerprint)
        if outcome.recorded:
            return ephemeral(_RECORDED_REPLIES[outcome])
        self._keep(click, proposal, standing, reviewer, outcome)
        return ephemeral(_SETTLED_REPLIES.get(outcome, CANNOT_DECIDE))

    def _open_edit(
        self, click: SlackClick, reviewer: Reviewer, proposal: Proposal, standing: Standing
    ) -> dict[str, Any] | None:
        """Open the edit modal on the version the message showed, if it could still be approved now."""
        refused = self._recorder.judge(proposal, standing, reviewer.id, click.fingerprint)
        if refused is not None:
            self._keep(click, proposal, standing, reviewer, refused)
            return ephemeral(_SETTLED_REPLIES.get(refused, CANNOT_DECIDE))
        view = edit_view(proposal, standing.current(proposal).args, click.fingerprint)
        try:
            self._views.open_view(click.trigger_id, view)
        except (SlackApiError, OSError, ConfigError, SecretUnavailable) as exc:
            self._metrics.add_metric(name="SlackModalNotOpened", unit="Count", value=1)
            self._log.warning("slack edit form not opened", extra={"error": str(exc)[:80]})
            return ephemeral(NOT_OPENED)
        return None

    def _submit(self, edit: SlackEdit) -> HttpResponse:
        """The modal's submission: an approval of the edited version, or why not, shown in the modal."""
        try:
            return self._record_edit(edit)
        except StoreUnavailable as exc:
            self._log.warning("slack decision not recorded", extra={"error": str(exc)[:80]})
            return json_response(200, notice(TRY_AGAIN))

    def _record_edit(self, edit: SlackEdit) -> HttpResponse:
        admitted = self._admit(edit, edit.approval_id, edit.seen)
        if isinstance(admitted, Why):
            self._refusals.record(edit.approval_id, "slack", edit.who, admitted)
            return json_response(200, notice(CANNOT_DECIDE))
        reviewer, proposal, standing = admitted
        try:
            outcome = self._recorder.record(
                proposal, reviewer.id, Choice.APPROVE, "slack", seen=edit.seen, edit=edit.changes
            )
        except EditRefused as exc:  # a value its schema refuses: shown under its field, nothing recorded
            return json_response(200, field_errors(str(exc), editable(proposal)))
        if outcome.recorded:
            return HttpResponse(200, "")  # an empty answer closes the modal; the message shows the rest
        self._keep(edit, proposal, standing, reviewer, outcome)
        return json_response(200, notice(_MODAL_REPLIES.get(outcome, CANNOT_DECIDE)))

    def _keep(
        self,
        actor: SlackActor,
        proposal: Proposal,
        standing: Standing,
        reviewer: Reviewer,
        outcome: DecisionOutcome,
    ) -> None:
        """Keep a reviewer's refused decision, with the reason code the recorder's outcome stands for."""
        why = _WHY.get(outcome, Why.SETTLED)
        if why is Why.SETTLED and any(d.reviewer == reviewer.id for d in standing.decisions):
            why = Why.REPLAY  # their own decision, again, on what it settled
        self._refusals.record(proposal.approval_id, "slack", actor.who, why)

    def _refuse(self, actor: SlackActor, approval_id: str, why: Why) -> dict[str, Any]:
        """Keep the refusal; the clicker is told only that they cannot decide it."""
        self._refusals.record(approval_id, "slack", actor.who, why)
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
