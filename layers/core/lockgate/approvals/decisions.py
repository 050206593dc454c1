"""A reviewer's decision: the stored record, the proposal's state from its decisions, and the rules
every decision follows (a link's POST and `lockgate approvals approve` share them).

Only a pending, unexpired, unchanged proposal takes a decision; only a reviewer allowed for its
tool may give one; each reviewer decides once (a conditional write). A decision that settles the
proposal becomes an inbox event, and the worker re-checks everything before acting on it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from lockgate.actions.tools import fingerprint
from lockgate.approvals.events import approval_event, enqueue
from lockgate.approvals.proposals import RETENTION_SECONDS, Proposal
from lockgate.clock import Clock
from lockgate.config import ApprovalsConfig, Reviewer
from lockgate.dynamo import write_if
from lockgate.errors import StoreUnavailable
from lockgate.inbox.queue import InboxQueue
from lockgate.inbox.store import InboxStore
from lockgate.telemetry import Log, Metrics

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

MAX_REASON_CHARS = 500  # a reviewer's optional reason for rejecting, shown to the others


class Choice(StrEnum):
    """What a reviewer decided."""

    APPROVE = "approve"
    REJECT = "reject"


class State(StrEnum):
    """Where a proposal stands, derived from its decisions and the clock."""

    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"
    EXPIRED = "expired"


@dataclass(frozen=True)
class DecisionRecord:
    """One reviewer's decision on one proposal."""

    approval_id: str
    reviewer: str
    verdict: Choice
    decided_at: int
    fingerprint: str  # of the arguments the reviewer saw (stored as "digest")
    via: str = "link"  # "link" or "cli"
    reason: str = ""  # why it was rejected, in the reviewer's words (optional; older items: none)

    @classmethod
    def from_item(cls, item: dict[str, Any]) -> DecisionRecord:
        """From a low-level DynamoDB item."""
        return cls(
            approval_id=item["approval_id"]["S"],
            reviewer=item["reviewer"]["S"],
            verdict=Choice(item["verdict"]["S"]),
            decided_at=int(item["decided_at"]["N"]),
            fingerprint=item["digest"]["S"],
            via=item.get("via", {}).get("S", "link"),
            reason=item.get("reason", {}).get("S", ""),
        )


def state_of(
    proposal: Proposal, decisions: list[DecisionRecord], now: float, allowed: frozenset[str] | None = None
) -> State:
    """Rejected if anyone rejected; approved once enough distinct allowed reviewers approved the arguments."""
    valid = [
        d
        for d in decisions
        if d.fingerprint == proposal.fingerprint and (allowed is None or d.reviewer in allowed)
    ]
    if any(d.verdict is Choice.REJECT for d in valid):
        return State.REJECTED
    approvers = {d.reviewer for d in valid if d.verdict is Choice.APPROVE}
    if len(approvers) >= proposal.reviewers_required:
        return State.APPROVED
    return State.EXPIRED if now > proposal.expires_at else State.PENDING


class DecisionStore:
    """The Decisions table. The worker's role may only read it."""

    def __init__(self, dynamodb: DynamoDBClient, table_name: str) -> None:
        self._db = dynamodb
        self._table = table_name

    def record(self, decision: DecisionRecord) -> bool:
        """Write a reviewer's decision once; False if this reviewer already decided (nothing changes)."""
        return write_if(
            self._db.put_item,
            TableName=self._table,
            Item={
                "approval_id": {"S": decision.approval_id},
                "reviewer": {"S": decision.reviewer},
                "verdict": {"S": decision.verdict.value},
                "decided_at": {"N": str(decision.decided_at)},
                "digest": {"S": decision.fingerprint},
                "via": {"S": decision.via},
                "ttl": {"N": str(decision.decided_at + RETENTION_SECONDS)},
                **({"reason": {"S": decision.reason}} if decision.reason else {}),
            },
            ConditionExpression="attribute_not_exists(reviewer)",
        )

    def for_approval(self, approval_id: str) -> list[DecisionRecord]:
        """Every decision on a proposal."""
        try:
            response = self._db.query(
                TableName=self._table,
                KeyConditionExpression="approval_id = :a",
                ExpressionAttributeValues={":a": {"S": approval_id}},
                ConsistentRead=True,
            )
        except (ClientError, BotoCoreError) as exc:
            raise StoreUnavailable(type(exc).__name__) from exc
        return [DecisionRecord.from_item(i) for i in response.get("Items", [])]


def checked_reason(text: str) -> str | None:
    """A reviewer's reason, trimmed, with control characters removed; None if it is too long."""
    kept = "".join(c for c in text.replace("\r\n", "\n") if c == "\n" or c.isprintable()).strip()
    return kept if len(kept) <= MAX_REASON_CHARS else None


def current_state(
    config: ApprovalsConfig, proposal: Proposal, decisions: list[DecisionRecord], now: float
) -> State:
    """The proposal's state at ``now``, counting only reviewers the config allows for its tool."""
    allowed = frozenset(r.id for r in config.reviewers_for(proposal.tool))
    return state_of(proposal, decisions, now, allowed)


class DecisionOutcome(StrEnum):
    """What recording one reviewer's decision did; the page and the CLI each word it their way."""

    APPROVED = "approved"  # this decision settled it: it will run once
    REJECTED = "rejected"  # this decision settled it: it will not happen
    AWAITING = "awaiting another reviewer"  # recorded; another reviewer must also approve
    ALREADY_DECIDED = "already decided"  # this reviewer decided before; the first decision stands
    ALREADY_APPROVED = "already approved"
    ALREADY_REJECTED = "already rejected"
    EXPIRED = "expired"
    CHANGED = "changed"  # the stored arguments no longer match their fingerprint
    NOT_ALLOWED = "not allowed"  # not a reviewer for this tool

    @property
    def recorded(self) -> bool:
        """Whether a decision row was written."""
        return self in (DecisionOutcome.APPROVED, DecisionOutcome.REJECTED, DecisionOutcome.AWAITING)


SETTLED = {
    State.APPROVED: DecisionOutcome.ALREADY_APPROVED,
    State.REJECTED: DecisionOutcome.ALREADY_REJECTED,
    State.EXPIRED: DecisionOutcome.EXPIRED,
}


class DecisionRecorder:
    """The rules every decision follows, whether it comes from a link's POST or from the CLI."""

    def __init__(
        self,
        *,
        decisions: DecisionStore,
        config: ApprovalsConfig,
        inbox: InboxStore,
        queue: InboxQueue,
        clock: Clock,
        log: Log,
        metrics: Metrics,
    ) -> None:
        self._decisions = decisions
        self._config = config
        self._inbox = inbox
        self._queue = queue
        self._clock = clock
        self._log = log
        self._metrics = metrics

    def reviewer(self, tool: str, reviewer_id: str) -> Reviewer | None:
        """The configured reviewer with this id if they may decide this tool's proposals, else None."""
        return next((r for r in self._config.reviewers_for(tool) if r.id == reviewer_id), None)

    def state(self, proposal: Proposal, decisions: list[DecisionRecord]) -> State:
        """The proposal's state now, counting only reviewers allowed for its tool."""
        return current_state(self._config, proposal, decisions, self._clock.now())

    def record(
        self, proposal: Proposal, reviewer_id: str, verdict: Choice, via: str, *, reason: str = ""
    ) -> DecisionOutcome:
        """One decision on a pending, unexpired, unchanged proposal; a settling one enqueues the event.

        ``reason`` (rejections only; callers check it with ``checked_reason`` first): ValueError if too long.
        """
        kept = checked_reason(reason) if verdict is Choice.REJECT else ""
        if kept is None:
            raise ValueError(f"a reason is at most {MAX_REASON_CHARS} characters")
        if self.reviewer(proposal.tool, reviewer_id) is None:
            return DecisionOutcome.NOT_ALLOWED
        if fingerprint(proposal.args) != proposal.fingerprint:
            return DecisionOutcome.CHANGED
        state = self.state(proposal, self._decisions.for_approval(proposal.approval_id))
        if state is not State.PENDING:
            return SETTLED[state]
        now = int(self._clock.now())
        record = DecisionRecord(
            proposal.approval_id, reviewer_id, verdict, now, proposal.fingerprint, via, kept
        )
        if not self._decisions.record(record):
            return DecisionOutcome.ALREADY_DECIDED
        self._metrics.add_metric(name=f"Approval_{verdict.value}", unit="Count", value=1)
        self._log.info(
            "approval decided",
            extra={
                "approval": proposal.approval_id,
                "reviewer": reviewer_id,
                "decision": verdict.value,
                "via": via,
                "reason_chars": len(kept),  # never the words: they can quote anything
            },
        )
        state = self.state(proposal, self._decisions.for_approval(proposal.approval_id))
        if state is State.APPROVED:
            self._enqueue(proposal, state, now)
            return DecisionOutcome.APPROVED
        if state is State.REJECTED:
            self._enqueue(proposal, state, now)
            return DecisionOutcome.REJECTED
        return DecisionOutcome.AWAITING

    def _enqueue(self, proposal: Proposal, state: State, now: int) -> None:
        """The decision becomes an inbox event; the worker re-checks everything before acting."""
        enqueue(self._inbox, self._queue, approval_event(proposal.approval_id, state.value, now), self._log)
