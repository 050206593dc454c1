"""Decisions: one per (approval, reviewer), written only by the approval side (IAM enforces it)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from lockgate.approvals.proposals import RETENTION_SECONDS, Proposal
from lockgate.dynamo import write_if
from lockgate.errors import StoreUnavailable


class Verdict(StrEnum):
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
    verdict: Verdict
    decided_at: int
    digest: str  # the argument digest the reviewer saw
    via: str = "link"  # "link" or "cli"

    @classmethod
    def from_item(cls, item: dict[str, Any]) -> DecisionRecord:
        """From a low-level DynamoDB item."""
        return cls(
            approval_id=item["approval_id"]["S"],
            reviewer=item["reviewer"]["S"],
            verdict=Verdict(item["verdict"]["S"]),
            decided_at=int(item["decided_at"]["N"]),
            digest=item["digest"]["S"],
            via=item.get("via", {}).get("S", "link"),
        )


def state_of(
    proposal: Proposal, decisions: list[DecisionRecord], now: float, allowed: frozenset[str] | None = None
) -> State:
    """Rejected if anyone rejected; approved once enough distinct allowed reviewers approved this digest."""
    valid = [
        d for d in decisions if d.digest == proposal.digest and (allowed is None or d.reviewer in allowed)
    ]
    if any(d.verdict is Verdict.REJECT for d in valid):
        return State.REJECTED
    approvers = {d.reviewer for d in valid if d.verdict is Verdict.APPROVE}
    if len(approvers) >= proposal.reviewers_required:
        return State.APPROVED
    return State.EXPIRED if now > proposal.expires_at else State.PENDING


class DecisionStore:
    """The Decisions table. The worker's role may only read it."""

    def __init__(self, dynamodb: Any, table_name: str) -> None:
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
                "digest": {"S": decision.digest},
                "via": {"S": decision.via},
                "ttl": {"N": str(decision.decided_at + RETENTION_SECONDS)},
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
