"""Refused decisions, kept: who tried to decide which request, through which channel, and why not.

Every refusal of a request we can attribute (a Slack click whose signature verified: Slack vouches
for its workspace, user and button) is one row in the Decisions table, written by the approval
callback's role (the only one that may write there), counted as ``ApprovalClickRefused`` and
logged. A request that fails its signature, or is too big to check, is not attributable: it is
logged and counted where it is refused (``SlackInteractionRefused``), and writes nothing, so an
unauthenticated sender cannot fill the table.

A refusal row sits beside the request's decisions (partition key: its approval id; sort key
``refused#<epoch>#<8 hex>``), so one query reads everything said about a request. It has no
``verdict`` and its ``kind`` is ``refusal``: it is never a decision, and where a proposal stands
(``lockgate.approvals.standing``) is read from decisions, versions and ``#state`` only.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from lockgate.approvals.decisions import DecisionOutcome
from lockgate.approvals.proposals import RETENTION_SECONDS
from lockgate.clock import Clock
from lockgate.dynamo import read_all, write_if
from lockgate.errors import StoreUnavailable
from lockgate.telemetry import Log, Metrics

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

PREFIX = "refused#"
MAX_ID_CHARS = 64
UNREAD = "-"  # the approval id when none could be read from the request
CHANNELS = frozenset({"slack", "link", "cli"})


class Why(StrEnum):
    """Why a decision was refused: a short fixed code, never the request's own words."""

    OTHER_WORKSPACE = "other-workspace"  # a Slack click from a workspace (or org) other than the pinned one
    NOT_A_REVIEWER = "not-a-reviewer"  # no reviewer is mapped to this Slack user
    NO_ROLE = "no-role"  # a reviewer, but not one for this tool
    UNKNOWN_REQUEST = "unknown-request"  # no such proposal
    CHANGED = "changed"  # the arguments differ from every version of the request
    EDITED = "edited"  # a reviewer edited it after the message (or page) showed it: look again
    SETTLED = "settled"  # already approved or rejected by others
    EXPIRED = "expired"  # nobody decided in time
    REPLAY = "replay"  # this reviewer already decided it: a second click, a retry or a replay
    NOT_A_CLICK = "not-a-click"  # signed by Slack, but not a click on one of our buttons
    RESPONSE_URL = "response-url"  # signed by Slack, but its answer would go outside Slack's host
    EDIT_REFUSED = "edit-refused"  # an edit the tool's schema, policies or approval rules refuse
    UNKNOWN_REVIEWER = "unknown-reviewer"  # a name that is no configured reviewer (the CLI's --as)


# What the recorder's refusing outcomes are called in a refusal row.
_BECAUSE = {
    DecisionOutcome.ALREADY_DECIDED: Why.REPLAY,
    DecisionOutcome.ALREADY_APPROVED: Why.SETTLED,
    DecisionOutcome.ALREADY_REJECTED: Why.SETTLED,
    DecisionOutcome.EXPIRED: Why.EXPIRED,
    DecisionOutcome.EDITED: Why.EDITED,
    DecisionOutcome.CHANGED: Why.CHANGED,
    DecisionOutcome.NOT_ALLOWED: Why.NO_ROLE,
}


def why_refused(outcome: DecisionOutcome) -> Why:
    """The reason code for a decision the recorder did not write (an outcome that is not ``recorded``)."""
    return _BECAUSE[outcome]


@dataclass(frozen=True)
class Refusal:
    """One refused attempt to decide."""

    approval_id: str  # as the request named it, clipped; "-" if none could be read
    channel: str  # slack, link or cli
    who: str  # "T0123/U0ALICE01" for Slack, a reviewer id otherwise; clipped
    why: Why
    at: int

    @classmethod
    def from_item(cls, item: dict[str, Any]) -> Refusal:
        """From a low-level DynamoDB item."""
        return cls(
            approval_id=item["approval_id"]["S"],
            channel=item["channel"]["S"],
            who=item["who"]["S"],
            why=Why(item["why"]["S"]),
            at=int(item["at"]["N"]),
        )


def clip(text: str | None) -> str:
    """An id from a request as a row keeps it: at most 64 characters, "-" when there is none."""
    kept = "".join(c for c in (text or "") if c.isprintable())[:MAX_ID_CHARS]
    return kept or UNREAD


class RefusalLog:
    """Writes each refusal to the Decisions table, counts it and logs it (no secrets, no bodies)."""

    def __init__(  # noqa: PLR0913 - the log's collaborators, injected
        self,
        dynamodb: DynamoDBClient,
        table_name: str,
        clock: Clock,
        log: Log,
        metrics: Metrics,
        token: Callable[[], str] = lambda: secrets.token_hex(4),
    ) -> None:
        self._db = dynamodb
        self._table = table_name
        self._clock = clock
        self._log = log
        self._metrics = metrics
        self._token = token

    def record(self, approval_id: str | None, channel: str, who: str, why: Why) -> Refusal:
        """Keep one refusal; a row that cannot be written is logged, and the refusal still stands."""
        if channel not in CHANNELS:
            raise ValueError(f"channel is one of {sorted(CHANNELS)}, got {channel!r}")
        refusal = Refusal(clip(approval_id), channel, clip(who), why, int(self._clock.now()))
        self._metrics.add_metric(name="ApprovalClickRefused", unit="Count", value=1)
        self._log.warning(
            "approval click refused",
            extra={"channel": channel, "why": why.value, "approval": refusal.approval_id, "who": refusal.who},
        )
        try:
            self._write(refusal)
        except StoreUnavailable as exc:
            self._metrics.add_metric(name="ApprovalRefusalNotRecorded", unit="Count", value=1)
            self._log.error("refusal not recorded", extra={"why": why.value, "error": str(exc)[:80]})
        return refusal

    def _write(self, refusal: Refusal) -> None:
        sort_key = f"{PREFIX}{refusal.at}#{self._token()}"
        write_if(
            self._db.put_item,
            TableName=self._table,
            Item={
                "approval_id": {"S": refusal.approval_id},
                "reviewer": {"S": sort_key},
                "kind": {"S": "refusal"},
                "channel": {"S": refusal.channel},
                "who": {"S": refusal.who},
                "why": {"S": refusal.why.value},
                "at": {"N": str(refusal.at)},
                "ttl": {"N": str(refusal.at + RETENTION_SECONDS)},
            },
            # A fresh random key: never overwrite another refusal (a clash loses a row, changes none).
            ConditionExpression="attribute_not_exists(reviewer)",
        )

    def for_approval(self, approval_id: str | None) -> list[Refusal]:
        """Every refusal kept for a request (``None`` or ``"-"``: those whose id could not be read)."""
        items = read_all(
            self._db.query,
            TableName=self._table,
            KeyConditionExpression="approval_id = :a AND begins_with(reviewer, :refused)",
            ExpressionAttributeValues={":a": {"S": clip(approval_id)}, ":refused": {"S": PREFIX}},
            ConsistentRead=True,
        )
        return sorted((Refusal.from_item(i) for i in items), key=lambda r: r.at)
