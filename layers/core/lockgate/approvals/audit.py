"""The audit trail of proposals: each one with its versions, decisions, refusals and what became of it.

Read-only, from where each fact is kept: the proposal (Approvals table); its decisions, edited
versions and refused attempts (Decisions table: rows with a ``verdict``, ``kind`` "version" and
``kind`` "refusal"); the operation ledger row it ran under (State table); and the approval event
the worker handled (Inbox table). An edited version runs under another ledger key than the one the
proposal recorded, so for an edited proposal the worker's outcome line is the record of what ran.
Nothing here holds a link, a token or a secret: none of them is stored with a proposal.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lockgate.actions.ledger import Ledger, Operation
from lockgate.approvals.decisions import current_state
from lockgate.approvals.eligibility import requirement_of
from lockgate.approvals.events import SOURCE
from lockgate.approvals.proposals import Proposal, ProposalStore
from lockgate.approvals.standing import DecisionRecord, Standing, State
from lockgate.approvals.versions import Version
from lockgate.clock import Clock
from lockgate.config import ApprovalsConfig
from lockgate.config.rules import Requirement
from lockgate.dynamo import read_all
from lockgate.errors import DeliveryNotFound
from lockgate.inbox.models import Delivery, delivery_key
from lockgate.inbox.store import InboxStore

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

# Decisions rows of refused attempts (lockgate.approvals.refusals): sort key "refused#<epoch>#<hex>".
# Read here as plain text, so a reason code added later is exported, not an error.
REFUSAL_KIND = "refusal"
VETO_EVENT = "veto"  # the end of a veto window (lockgate.approvals.events.VetoTimer)


@dataclass(frozen=True)
class AuditRefusal:
    """A refused attempt to decide a proposal, as the audit exports it: when, where, by whom, why."""

    at: int
    channel: str  # slack, link or cli
    who: str  # as the channel named them ("T0123/U0ALICE01" for Slack, a reviewer id otherwise)
    why: str  # a short code: not-a-reviewer, no-role, settled, replay, ...

    @classmethod
    def from_item(cls, item: Mapping[str, Any]) -> AuditRefusal:
        """From a low-level Decisions item (``kind`` "refusal"); a missing ``at`` is read from its key."""
        at = _text(item, "at")
        if not at.isdigit():
            parts = _text(item, "reviewer").split("#")
            at = parts[1] if len(parts) > 1 and parts[1].isdigit() else "0"
        return cls(int(at), _text(item, "channel"), _text(item, "who"), _text(item, "why"))


@dataclass(frozen=True)
class AuditOutcome:
    """Where a proposal stands and what became of its action, as far as the stores say."""

    state: str  # approved, rejected, expired or pending
    ledger_state: str = ""  # the operation ledger's row for the action as proposed: SUCCEEDED, FAILED, ...
    ledger_at: int | None = None  # when the ledger row last changed
    worker_event: str = ""  # the approval event the worker was given: approved, rejected, expired, veto
    worker_status: str = ""  # that inbox event's status: received, processing, done, failed
    worker_outcome: str = ""  # the worker's outcome line for it (or its last error)
    worker_at: int | None = None  # when the event last changed


@dataclass(frozen=True)
class AuditRecord:
    """One proposal as an auditor reads it: what was asked, every change and decision, and the outcome."""

    approval_id: str
    task: str
    run_id: str
    tool: str
    summary: str
    args: dict[str, Any]
    fingerprint: str
    why: tuple[str, ...]
    requester: str
    unverified_reason: str  # the assistant's own words, never verified
    reviewers_required: int
    created_at: int
    expires_at: int
    versions: tuple[Version, ...]  # reviewers' edits, by number
    decisions: tuple[DecisionRecord, ...]  # by time, version, reviewer
    refusals: tuple[AuditRefusal, ...]  # by time
    outcome: AuditOutcome
    # Who had to approve it as proposed, by which approval rules (each version carries its own).
    requirement: Requirement | None = None


def decision_order(decision: DecisionRecord) -> tuple[int, int, str]:
    """The order decisions are listed in: when, which version, who."""
    return (decision.decided_at, decision.version, decision.reviewer)


def refusal_order(refusal: AuditRefusal) -> tuple[int, str, str, str]:
    """The order refusals are listed in: when, then the rest of it."""
    return (refusal.at, refusal.channel, refusal.who, refusal.why)


class AuditTrail:
    """Reads the audit records of the proposals created in a time range; it changes nothing."""

    def __init__(  # noqa: PLR0913 - the stores each fact comes from
        self,
        *,
        proposals: ProposalStore,
        dynamodb: DynamoDBClient,
        decisions_table: str,
        ledger: Ledger,
        inbox: InboxStore,
        config: ApprovalsConfig,
        clock: Clock,
    ) -> None:
        self._proposals = proposals
        self._db = dynamodb
        self._decisions_table = decisions_table
        self._ledger = ledger
        self._inbox = inbox
        self._config = config
        self._clock = clock

    def records(self, since: int, until: int) -> Iterator[AuditRecord]:
        """The proposals created at or after ``since`` and before ``until``, oldest first."""
        found = [p for p in self._proposals.created_since(since) if p.created_at < until]
        for proposal in sorted(found, key=lambda p: (p.created_at, p.approval_id)):
            yield self.record(proposal)

    def record(self, proposal: Proposal) -> AuditRecord:
        """One proposal's record, read now."""
        items = read_all(
            self._db.query,
            TableName=self._decisions_table,
            KeyConditionExpression="approval_id = :a",
            ExpressionAttributeValues={":a": {"S": proposal.approval_id}},
            ConsistentRead=True,
        )
        decisions = sorted((DecisionRecord.from_item(i) for i in items if "verdict" in i), key=decision_order)
        versions = sorted((Version.from_item(i) for i in items if _kind(i) == "version"), key=lambda v: v.n)
        refusals = sorted(
            (AuditRefusal.from_item(i) for i in items if _kind(i) == REFUSAL_KIND), key=refusal_order
        )
        standing = Standing(decisions, versions)
        state = current_state(self._config, proposal, standing, self._clock.now())
        return AuditRecord(
            approval_id=proposal.approval_id,
            task=proposal.task,
            run_id=proposal.run_id,
            tool=proposal.tool,
            summary=proposal.summary,
            args=proposal.args,
            fingerprint=proposal.fingerprint,
            why=proposal.why,
            requester=proposal.requester,
            unverified_reason=proposal.unverified_reason,
            reviewers_required=proposal.reviewers_required,
            created_at=proposal.created_at,
            expires_at=proposal.expires_at,
            versions=tuple(versions),
            decisions=tuple(decisions),
            refusals=tuple(refusals),
            outcome=self._outcome(proposal, state, standing.current(proposal).op_key),
            requirement=requirement_of(self._config, proposal, Standing().current(proposal)),
        )

    def _outcome(self, proposal: Proposal, state: State, op_key: str) -> AuditOutcome:
        op = self._ledger_row(proposal, op_key)
        kind = _event_kind(proposal, state)
        event = self._event(proposal, kind) if kind else None
        return AuditOutcome(
            state=state.value,
            ledger_state=op.state.value if op else "",
            ledger_at=op.updated_at if op else None,
            worker_event=kind if event else "",
            worker_status=event.status.value if event else "",
            worker_outcome=(event.outcome or event.last_error or "") if event else "",
            worker_at=event.updated_at if event else None,
        )

    def _ledger_row(self, proposal: Proposal, op_key: str) -> Operation | None:
        """The ledger row the version that runs runs under (``op_key``: "" for an edit recorded before
        versions kept their key), if this proposal's run wrote it."""
        op = self._ledger.get(op_key) if op_key else None
        # The same business identity from another run (a replay) is that run's action, not this one's.
        return op if op is not None and op.run_id in ("", proposal.run_id) else None

    def _event(self, proposal: Proposal, kind: str) -> Delivery | None:
        try:
            return self._inbox.get(delivery_key(SOURCE, f"{proposal.approval_id}#{kind}"))
        except DeliveryNotFound:
            return None


def _event_kind(proposal: Proposal, state: State) -> str:
    """Which approval event says what became of the action in this state ("" for none yet)."""
    if "veto_until" in proposal.extra and state in (State.PENDING, State.EXPIRED):
        return VETO_EVENT  # a veto-window action runs when the window closes unless someone rejects it
    return "" if state is State.PENDING else state.value


def _kind(item: Mapping[str, Any]) -> str:
    return _text(item, "kind")


def _text(item: Mapping[str, Any], name: str) -> str:
    value = item.get(name) or {}
    return str(value.get("S", value.get("N", "")))
