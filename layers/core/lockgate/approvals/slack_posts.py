"""Each proposal's one Slack message: posted once however often its stream record comes, and updated
whenever a decision is recorded, whoever decides and however (a click, a link's page, the CLI).

Posting: the notifier claims the proposal's row (a conditional put) before it calls
``chat.postMessage``, and keeps the message's ``ts`` after. A retried record that finds a claim
with a ``ts`` does nothing. One that finds a claim without a ``ts`` (the earlier attempt died, or
Slack took the post and its answer was lost) does not post blindly: it waits until the earlier
attempt's request must have ended (``CLAIM_GRACE_SECONDS`` after the claim), then looks in the
channel's history for a message carrying this proposal's id in its metadata (``event_type``
``lockgate_approval``), keeps that one's ``ts`` if found, and posts only if none is there.

Updating: the Decisions table's stream brings every new row to the notifier, which re-reads the
proposal and where it stands and, when what the message should show has changed, calls
``chat.update``: an edited version (its changes, and buttons for it), "1 of 2 approvals (alice at
14:02 UTC) …", "Approved by alice at 14:02 UTC — runs once", "Rejected by …", or "Expired …" (a
click on an expired request leaves a refusal row, so its message catches up). A decision recorded
while the message was being posted is shown right after its ``ts`` is kept, by the poster itself.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

from lockgate.approvals.decisions import Choice, DecisionStore, current_state
from lockgate.approvals.eligibility import eligible_reviewers, requirement_of
from lockgate.approvals.proposals import Proposal, ProposalStore
from lockgate.approvals.slack_api import SlackApiError, SlackWebApi
from lockgate.approvals.slack_messages import message_for
from lockgate.approvals.slack_records import SlackPost, SlackPostStore
from lockgate.clock import Clock
from lockgate.config import ApprovalsConfig, SlackApprovals
from lockgate.telemetry import Log, Metrics

EVENT_TYPE = "lockgate_approval"  # the message metadata's event_type; its payload holds the approval id
# An earlier attempt's chat.postMessage has ended this long after its claim (a 5 s request timeout,
# after the bot token's read): only then is "not in the history" proof that it never reached Slack.
CLAIM_GRACE_SECONDS = 15
HISTORY_MARGIN_SECONDS = 60  # look this far before the claim too (our clock and Slack's differ a little)
MAX_HISTORY_PAGES = 5
# The message cannot be changed any more (deleted, channel gone or archived): retrying cannot help.
GONE = frozenset({"message_not_found", "channel_not_found", "cant_update_message", "is_archived"})
GONE_SHOWN = "gone"  # what the row says a message shows once Slack said it cannot be updated


class SearchInconclusive(Exception):  # noqa: N818 - the record is retried, not posted twice
    """The channel's history was too long to read through; nothing is posted, the record is retried."""


def shown_digest(text: str, blocks: list[dict[str, Any]]) -> str:
    """A short digest of what a message shows, to skip updates that would change nothing."""
    return hashlib.sha256(json.dumps([text, blocks], sort_keys=True).encode()).hexdigest()[:16]


class SlackPosts:
    """Posts each proposal's message once and keeps it true to the proposal's decisions."""

    def __init__(  # noqa: PLR0913 - the notifier's collaborators, injected
        self,
        *,
        settings: SlackApprovals,
        api: SlackWebApi,
        records: SlackPostStore,
        proposals: ProposalStore,
        decisions: DecisionStore,
        config: ApprovalsConfig,
        clock: Clock,
        sleep: Callable[[float], None],
        log: Log,
        metrics: Metrics,
    ) -> None:
        self._channel = settings.channel
        self._api = api
        self._records = records
        self._proposals = proposals
        self._decisions = decisions
        self._config = config
        self._clock = clock
        self._sleep = sleep
        self._log = log
        self._metrics = metrics

    def post(self, proposal: Proposal) -> None:
        """Post the proposal's message unless an earlier attempt did; raise so the stream retries."""
        approval_id = proposal.approval_id
        earlier = self._records.claim(approval_id, self._channel, int(self._clock.now()), proposal.expires_at)
        if earlier is not None and earlier.ts:
            self._log.info("slack message already posted", extra={"approval": approval_id})
            return
        channel = self._channel if earlier is None else earlier.channel
        text, blocks = self._view(proposal)
        found = self._find(earlier) if earlier is not None else ""
        if found:  # it shows what the earlier attempt posted: "" (unknown) makes it catch up below
            ts, shown = found, ""
        else:
            ts, shown = self._post_new(approval_id, channel, text, blocks), shown_digest(text, blocks)
        if not self._records.posted(approval_id, ts, shown):
            self._metrics.add_metric(name="SlackMessageDuplicate", unit="Count", value=1)
            self._log.warning("slack message kept by another attempt", extra={"approval": approval_id})
            return
        # A decision recorded while this was posted found no ts to update: show it now.
        self._show(proposal, SlackPost(approval_id, channel, 0, ts, shown))

    def refresh(self, approval_id: str) -> None:
        """Show the proposal's state now, if its message was posted and shows something else."""
        post = self._records.get(approval_id)
        if post is None or not post.ts:
            return  # not posted yet: the poster shows the state once it keeps the ts
        proposal = self._proposals.get(approval_id)
        if proposal is not None:
            self._show(proposal, post)

    def _show(self, proposal: Proposal, post: SlackPost) -> None:
        if post.shown == GONE_SHOWN:
            return  # deleted or archived in Slack: nothing to update, and no call to make
        text, blocks = self._view(proposal)
        shown = shown_digest(text, blocks)
        if shown == post.shown:
            return
        try:
            self._api.update_message(post.channel, post.ts, text, blocks)
        except SlackApiError as exc:
            if exc.code not in GONE:
                raise
            self._gone(post, exc.code)
            return
        self._records.shown(post.approval_id, post.ts, shown)
        self._metrics.add_metric(name="SlackMessageUpdated", unit="Count", value=1)

    def _gone(self, post: SlackPost, code: str) -> None:
        """Slack says the message cannot change any more: say so once, and never call for it again."""
        self._metrics.add_metric(name="SlackMessageGone", unit="Count", value=1)
        self._log.warning(
            "slack message cannot be updated", extra={"approval": post.approval_id, "error": code}
        )
        self._records.shown(post.approval_id, post.ts, GONE_SHOWN)

    def _view(self, proposal: Proposal) -> tuple[str, list[dict[str, Any]]]:
        """What the message should show now, from the stored decisions."""
        standing = self._decisions.standing(proposal.approval_id)
        state = current_state(self._config, proposal, standing, self._clock.now())
        current = standing.current(proposal)
        reviewers = eligible_reviewers(self._config, proposal, current)
        allowed = {r.id for r in reviewers}
        # What counts: allowed reviewers' rejections, and their approvals of the current version.
        counted = [
            d
            for d in standing.decisions
            if d.reviewer in allowed
            and (d.verdict is Choice.REJECT or (d.version, d.fingerprint) == (current.n, current.fingerprint))
        ]
        requirement = requirement_of(self._config, proposal, current)
        return message_for(proposal, reviewers, counted, state, standing.versions, requirement)

    def _post_new(self, approval_id: str, channel: str, text: str, blocks: list[dict[str, Any]]) -> str:
        metadata = {"event_type": EVENT_TYPE, "event_payload": {"approval_id": approval_id}}
        ts = self._api.post_message(channel, text, blocks, metadata)
        self._metrics.add_metric(name="SlackMessagePosted", unit="Count", value=1)
        return ts

    def _find(self, earlier: SlackPost) -> str:
        """The ts of the message an earlier attempt posted, once it must have landed; "" if it never did."""
        wait = earlier.claimed_at + CLAIM_GRACE_SECONDS - self._clock.now()
        if wait > 0:
            self._sleep(wait)
        found: list[str] = []
        cursor = ""
        for _ in range(MAX_HISTORY_PAGES):
            oldest = earlier.claimed_at - HISTORY_MARGIN_SECONDS
            messages, cursor = self._api.history(earlier.channel, oldest, cursor)
            found += [str(m.get("ts", "")) for m in messages if _carries(m, earlier.approval_id)]
            if not cursor:
                break
        else:
            if not found:
                raise SearchInconclusive(f"more than {MAX_HISTORY_PAGES} pages of history since the claim")
        outcome = "found" if found else "not found: posting it"
        self._metrics.add_metric(name="SlackMessageSearched", unit="Count", value=1)
        self._log.warning(
            f"slack message of an earlier attempt {outcome}", extra={"approval": earlier.approval_id}
        )
        return min(found, key=float) if found else ""


def _carries(message: dict[str, Any], approval_id: str) -> bool:
    """Whether a message from the history is this proposal's (by its metadata, not its words)."""
    metadata = message.get("metadata")
    if not isinstance(metadata, dict) or metadata.get("event_type") != EVENT_TYPE:
        return False
    payload = metadata.get("event_payload")
    return isinstance(payload, dict) and payload.get("approval_id") == approval_id
