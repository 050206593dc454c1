"""The notifier's stream batches: new proposals (the Approvals stream) are announced, and an escalated
one is sent to its second group; new rows in the Decisions table (its keys-only stream: a decision,
an edited version, a refused click) bring the proposal's Slack message up to date. A record that
fails is reported, so Lambda retries from it (then the DLQ)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lockgate.approvals.eligibility import escalation_reviewers
from lockgate.approvals.notify import Notifier
from lockgate.approvals.proposals import Proposal
from lockgate.approvals.refusals import UNREAD
from lockgate.approvals.slack_posts import SlackPosts
from lockgate.approvals.standing import Standing
from lockgate.config import ApprovalsConfig
from lockgate.telemetry import Log


def decided_approval(keys: Mapping[str, Any]) -> str | None:
    """The approval a Decisions row is about (a decision, an edit, a refused click), or None if unknown."""
    approval_id = str((keys.get("approval_id") or {}).get("S", ""))
    return None if approval_id in ("", UNREAD) else approval_id


class NotifyBatch:
    """One stream batch for the notifier; a record's keys tell the streams apart (a Decisions row has a
    ``reviewer`` sort key, a proposal none)."""

    def __init__(
        self, notifier: Notifier, posts: SlackPosts | None, log: Log, config: ApprovalsConfig | None = None
    ) -> None:
        self._notifier = notifier
        self._posts = posts
        self._log = log
        self._config = config or ApprovalsConfig()  # who an escalation adds

    def handle(self, event: Mapping[str, Any]) -> dict[str, Any]:
        """Every record of the batch; the failed ones are reported by sequence number."""
        failures = []
        for record in event.get("Records", []):
            try:
                self._one(record)
            except Exception:  # noqa: BLE001 - reported to Lambda as a failed record, retried, then DLQ
                self._log.exception("stream record failed; it will be retried")
                failures.append({"itemIdentifier": record["dynamodb"]["SequenceNumber"]})
        return {"batchItemFailures": failures}

    def _one(self, record: Mapping[str, Any]) -> None:
        change = record["dynamodb"]
        keys = change.get("Keys") or {}
        if record.get("eventName") == "MODIFY" and "reviewer" not in keys:
            self._escalated(Proposal.from_item(change["NewImage"]))
            return
        if record.get("eventName") != "INSERT":
            return  # decisions are written once; TTL deletions need nothing
        if "reviewer" in keys:
            approval_id = decided_approval(keys)
            if self._posts is not None and approval_id is not None:
                self._posts.refresh(approval_id)
            return
        self._notifier.notify(Proposal.from_item(change["NewImage"]))

    def _escalated(self, proposal: Proposal) -> None:
        """The one change a stored proposal ever gets: escalated. Its second group gets their links, and
        its Slack message shows who may now decide."""
        if proposal.escalated_at is None:
            return
        group = escalation_reviewers(self._config, proposal, Standing().current(proposal))
        if group:
            self._notifier.notify(proposal, only=[r.id for r in group])
        if self._posts is not None:
            self._posts.refresh(proposal.approval_id)
