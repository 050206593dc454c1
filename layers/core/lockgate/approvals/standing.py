"""Where a proposal stands: its decisions and edited versions in the Decisions table, and the state
they add up to.

The Decisions table holds, per proposal (``approval_id``), one item per reviewer and version
(sort key ``reviewer``: ``alice`` for the proposal as made, ``alice#v1`` for its first edit), one
item per edited version (``#v1``, ...), refusals (``refused#...``) and one ``#state`` item. Every
decision is one transaction: its own row (written once), the new version if it is an edit, and
the ``#state`` item under a revision check. Two decisions that both read revision 4 cannot both
write revision 5: one outcome, however clicks, links and the CLI race.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from lockgate.approvals.proposals import RETENTION_SECONDS, Proposal
from lockgate.approvals.versions import Version
from lockgate.config.rules import Requirement
from lockgate.dynamo import error_code, read_all
from lockgate.errors import StoreUnavailable

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

STATE_KEY = "#state"
MAX_RACES = 12  # decisions that lost a race read again; each loss means another one was written
_RACED = ("ConditionalCheckFailed", "TransactionConflict")


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
    """One reviewer's decision on one version of a proposal."""

    approval_id: str
    reviewer: str
    verdict: Choice
    decided_at: int
    fingerprint: str  # of the arguments the reviewer saw (stored as "digest")
    via: str = "link"  # "link", "cli" or "slack"
    reason: str = ""  # why it was rejected, in the reviewer's words (optional; older items: none)
    version: int = 0  # 0: the arguments as proposed; n: the nth edit

    @property
    def key(self) -> str:
        """Its sort key: one decision per reviewer and version."""
        return self.reviewer if self.version == 0 else f"{self.reviewer}#v{self.version}"

    def to_item(self) -> dict[str, Any]:
        """The low-level DynamoDB item."""
        return {
            "approval_id": {"S": self.approval_id},
            "reviewer": {"S": self.key},
            "by": {"S": self.reviewer},
            "verdict": {"S": self.verdict.value},
            "decided_at": {"N": str(self.decided_at)},
            "digest": {"S": self.fingerprint},
            "via": {"S": self.via},
            "version": {"N": str(self.version)},
            "ttl": {"N": str(self.decided_at + RETENTION_SECONDS)},
            **({"reason": {"S": self.reason}} if self.reason else {}),
        }

    @classmethod
    def from_item(cls, item: dict[str, Any]) -> DecisionRecord:
        """From a low-level DynamoDB item (older items: no ``by``, no ``version``)."""
        return cls(
            approval_id=item["approval_id"]["S"],
            reviewer=item.get("by", item["reviewer"])["S"],
            verdict=Choice(item["verdict"]["S"]),
            decided_at=int(item["decided_at"]["N"]),
            fingerprint=item["digest"]["S"],
            via=item.get("via", {}).get("S", "link"),
            reason=item.get("reason", {}).get("S", ""),
            version=int(item.get("version", {}).get("N", "0")),
        )


@dataclass(frozen=True)
class Current:
    """The version reviewers decide now: its number, arguments, fingerprint, summary and requirement."""

    n: int
    args: dict[str, Any]
    fingerprint: str
    editor: str = ""  # who made it ("" for the proposal as made)
    summary: str = ""  # the tool's own one line for it ("" for an edit recorded before summaries were)
    requirement: Requirement | None = None  # who must approve it, by which rule (None: an older item)
    op_key: str = ""  # the ledger key it runs under ("": unknown, an edit recorded before keys were kept)


@dataclass(frozen=True)
class Standing:
    """Everything the Decisions table holds on one proposal, and the ``#state`` revision it was read at."""

    decisions: list[DecisionRecord] = field(default_factory=list)
    versions: list[Version] = field(default_factory=list)
    revision: int = 0

    def current(self, proposal: Proposal) -> Current:
        """The latest version: the last edit, or the proposal as made."""
        if not self.versions:
            op_key = proposal.extra.get("op_key")
            return Current(
                0,
                proposal.args,
                proposal.fingerprint,
                "",
                proposal.summary,
                proposal.requirement,
                op_key if isinstance(op_key, str) else "",
            )
        last = max(self.versions, key=lambda v: v.n)
        return Current(
            last.n, last.args, last.fingerprint, last.editor, last.summary, last.requirement, last.op_key
        )

    def decided(self, reviewer: str, version: int) -> bool:
        """Whether ``reviewer`` already decided this version."""
        return any(d.reviewer == reviewer and d.version == version for d in self.decisions)

    def approvers(self, proposal: Proposal, allowed: frozenset[str]) -> list[str]:
        """The allowed reviewers who approved the current version, sorted."""
        current = self.current(proposal)
        return sorted({d.reviewer for d in self._approvals(current, allowed)})

    def approved_at(self, proposal: Proposal, allowed: frozenset[str]) -> int:
        """When the last counted approval of the current version was given (0 if none)."""
        return max((d.decided_at for d in self._approvals(self.current(proposal), allowed)), default=0)

    def _approvals(self, current: Current, allowed: frozenset[str]) -> list[DecisionRecord]:
        return [
            d
            for d in self.decisions
            if d.verdict is Choice.APPROVE
            and d.reviewer in allowed
            and d.version == current.n
            and d.fingerprint == current.fingerprint
        ]

    def with_decision(self, decision: DecisionRecord, version: Version | None) -> Standing:
        """What it would be after ``decision`` (and ``version``) were written."""
        versions = [*self.versions, version] if version else self.versions
        return Standing([*self.decisions, decision], versions, self.revision + 1)


class DecisionStore:
    """The Decisions table. The worker's role may only read it."""

    def __init__(self, dynamodb: DynamoDBClient, table_name: str) -> None:
        self._db = dynamodb
        self._table = table_name

    def standing(self, approval_id: str) -> Standing:
        """Every decision and version on a proposal, with the revision they were read at."""
        try:
            items = read_all(
                self._db.query,
                TableName=self._table,
                KeyConditionExpression="approval_id = :a",
                ExpressionAttributeValues={":a": {"S": approval_id}},
                ConsistentRead=True,
            )
        except (ClientError, BotoCoreError) as exc:
            raise StoreUnavailable(type(exc).__name__) from exc
        decisions = [DecisionRecord.from_item(i) for i in items if "verdict" in i]
        versions = [Version.from_item(i) for i in items if i.get("kind", {}).get("S") == "version"]
        state = next((i for i in items if i["reviewer"]["S"] == STATE_KEY), None)
        revision = int(state["revision"]["N"]) if state else 0
        return Standing(
            sorted(decisions, key=lambda d: d.decided_at), sorted(versions, key=lambda v: v.n), revision
        )

    def for_approval(self, approval_id: str) -> list[DecisionRecord]:
        """Every decision on a proposal, oldest first."""
        return self.standing(approval_id).decisions

    def record(self, decision: DecisionRecord) -> bool:
        """Write one decision at the revision read now, with no rules checked (seeding, repairs);
        False if this reviewer already decided this version. Reviewers' decisions go through
        ``DecisionRecorder``."""
        for _ in range(MAX_RACES):
            if self.settle(decision, self.standing(decision.approval_id).revision, None):
                return True
            if self.standing(decision.approval_id).decided(decision.reviewer, decision.version):
                return False
        raise StoreUnavailable("too many decisions at once")

    def settle(
        self, decision: DecisionRecord, read_at: int, state: State | None, version: Version | None = None
    ) -> bool:
        """Write ``decision`` (and ``version``) if nothing was decided since revision ``read_at``.

        One transaction: False when another decision got there first or this reviewer already
        decided this version (read again and think again); StoreUnavailable on other errors.
        """
        ttl = decision.decided_at + RETENTION_SECONDS
        items: list[dict[str, Any]] = [
            {
                "Put": {
                    "TableName": self._table,
                    "Item": decision.to_item(),
                    "ConditionExpression": "attribute_not_exists(reviewer)",
                }
            },
            {
                "Put": {
                    "TableName": self._table,
                    "Item": {
                        "approval_id": {"S": decision.approval_id},
                        "reviewer": {"S": STATE_KEY},
                        "kind": {"S": "state"},
                        "revision": {"N": str(read_at + 1)},
                        **({"state": {"S": state.value}} if state else {}),
                        "version": {"N": str(decision.version)},
                        "digest": {"S": decision.fingerprint},
                        "updated_at": {"N": str(decision.decided_at)},
                        "ttl": {"N": str(ttl)},
                    },
                    **_at_revision(read_at),
                }
            },
        ]
        if version is not None:
            items.append(
                {
                    "Put": {
                        "TableName": self._table,
                        "Item": version.to_item(decision.approval_id, ttl),
                        "ConditionExpression": "attribute_not_exists(reviewer)",
                    }
                }
            )
        try:
            self._db.transact_write_items(TransactItems=items)  # type: ignore[arg-type]
        except ClientError as exc:
            reasons = exc.response.get("CancellationReasons", [])
            if error_code(exc) == "TransactionCanceledException" and any(
                str(r.get("Code")) in _RACED for r in reasons
            ):
                return False
            raise StoreUnavailable(error_code(exc)) from exc
        except BotoCoreError as exc:
            raise StoreUnavailable(type(exc).__name__) from exc
        return True


def _at_revision(read_at: int) -> dict[str, Any]:
    """The ``#state`` item's condition: still at the revision the decision was made from."""
    if read_at == 0:
        return {"ConditionExpression": "attribute_not_exists(reviewer)"}
    return {
        "ConditionExpression": "revision = :read",
        "ExpressionAttributeValues": {":read": {"N": str(read_at)}},
    }


def summary_of(proposal: Proposal, current: Current) -> str:
    """The one line a reviewer reads for the version that would run: its own summary; for an edit
    recorded before versions kept one, the proposal's, marked as edited."""
    if current.n == 0:
        return proposal.summary
    return current.summary or f"{proposal.summary} (as edited in version {current.n})"
