"""Proposals: an action the agent wants that waits for a person. Written once, never changed."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from lockgate.actions.facts import Fact
from lockgate.config.rules import Requirement
from lockgate.dynamo import conditional_failed, read_page
from lockgate.errors import StoreUnavailable
from lockgate.schema import check_readable, stamped

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

HOUR = 3_600
RETENTION_SECONDS = 30 * 86_400
MAX_KEY_BYTES = 2_048  # DynamoDB's limit on a partition key's value
POLICY_VERSION = "1"
# A proposal item stays far below DynamoDB's 400 KB: a quoted email is clipped, not refused.
MAX_FACTS = 20
MAX_FACT_CHARS = 4_000
# "Did this happen?" proposals (reconcile-operations): a person's answer is applied to the ledger
# by that job and never executed. Reviewers come from [approvals.tools.resolve_operation].
RESOLVE_TOOL = "resolve_operation"
RESOLVE_TASK = "lockgate.operations"


def approval_id_for(run_id: str, call_id: str) -> str:
    """Stable per tool call, so a replayed step finds its proposal instead of making a second one."""
    return "ap_" + hashlib.sha256(f"{run_id}\n{call_id}".encode()).hexdigest()[:24]


@dataclass(frozen=True)
class Proposal:
    """What a person is asked to approve; everything shown to them comes from here."""

    approval_id: str
    task: str
    run_id: str
    tool: str
    args: dict[str, Any]  # canonical JSON-ready arguments
    fingerprint: str  # of the canonical arguments (stored as "digest"): a link is bound to it
    summary: str  # built by code from the real arguments
    unverified_reason: str  # the assistant's own words, shown as unverified
    why: tuple[str, ...]  # why a person is asked (threshold, taint with its source, ...)
    created_at: int
    expires_at: int  # decide by
    run_within_seconds: int
    reviewers_required: int = 1
    requester: str = ""
    policy_version: str = POLICY_VERSION
    call_id: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    tool_schema: str = ""  # fingerprint of the tool's argument schema when proposed ("" before it was kept)
    facts: tuple[Fact, ...] = ()  # what the decision rests on, read when proposed (older items: none)
    # Who must approve the call as proposed, and which approval rules said so (older items: None,
    # read as the tool's section in lockgate.toml with reviewers_required).
    requirement: Requirement | None = None
    # When the escalate-approvals job escalated it to its tool's escalate_roles (None: not escalated).
    # Set once, afterwards, and the only thing ever set on a stored proposal; never part of what is
    # approved (its fingerprint), never written by the worker.
    escalated_at: int | None = None

    def to_item(self) -> dict[str, Any]:
        """The DynamoDB item (low-level); ``facts`` only when there are some (older readers ignore it)."""
        facts = [
            {"label": f.label[:200], "value": f.value[:MAX_FACT_CHARS], "verified": f.verified}
            for f in self.facts[:MAX_FACTS]
        ]
        return stamped(
            {
                **({"facts": {"S": json.dumps(facts)}} if facts else {}),
                **({"requirement": {"S": self.requirement.dumps()}} if self.requirement else {}),
                "approval_id": {"S": self.approval_id},
                "task": {"S": self.task},
                "run_id": {"S": self.run_id},
                "tool": {"S": self.tool},
                "args": {"S": json.dumps(self.args, sort_keys=True)},
                "digest": {"S": self.fingerprint},
                "summary": {"S": self.summary[:500]},
                "unverified_reason": {"S": self.unverified_reason[:2000] or "-"},
                "why": {"S": json.dumps(list(self.why))},
                "created_at": {"N": str(self.created_at)},
                "expires_at": {"N": str(self.expires_at)},
                "run_within_seconds": {"N": str(self.run_within_seconds)},
                "reviewers_required": {"N": str(self.reviewers_required)},
                "requester": {"S": self.requester or "-"},
                "policy_version": {"S": self.policy_version},
                "call_id": {"S": self.call_id or "-"},
                "extra": {"S": json.dumps(self.extra)},
                "tool_schema": {"S": self.tool_schema or "-"},
                "ttl": {"N": str(self.created_at + RETENTION_SECONDS)},
            }
        )

    @classmethod
    def from_item(cls, item: dict[str, Any]) -> Proposal:
        """From a low-level DynamoDB item; SchemaTooNew if a newer version wrote it."""
        check_readable(item, f"proposal {item.get('approval_id', {}).get('S', '?')}")
        s = {k: v["S"] for k, v in item.items() if "S" in v}
        n = {k: int(v["N"]) for k, v in item.items() if "N" in v}
        return cls(
            approval_id=s["approval_id"],
            task=s["task"],
            run_id=s["run_id"],
            tool=s["tool"],
            args=json.loads(s["args"]),
            fingerprint=s["digest"],
            summary=s["summary"],
            unverified_reason="" if s.get("unverified_reason") == "-" else s.get("unverified_reason", ""),
            why=tuple(json.loads(s.get("why", "[]"))),
            created_at=n["created_at"],
            expires_at=n["expires_at"],
            run_within_seconds=n.get("run_within_seconds", HOUR),
            reviewers_required=n.get("reviewers_required", 1),
            requester="" if s.get("requester") == "-" else s.get("requester", ""),
            policy_version=s.get("policy_version", POLICY_VERSION),
            call_id="" if s.get("call_id") == "-" else s.get("call_id", ""),
            extra=json.loads(s.get("extra", "{}")),
            tool_schema="" if s.get("tool_schema") == "-" else s.get("tool_schema", ""),
            facts=tuple(
                Fact(str(f["label"]), str(f["value"]), bool(f.get("verified", False)))
                for f in json.loads(s.get("facts", "[]"))
            ),
            requirement=Requirement.from_json(json.loads(s["requirement"])) if "requirement" in s else None,
            escalated_at=n.get("escalated_at"),
        )


def answers_only(proposal: Proposal) -> bool:
    """True for a "did this happen?" proposal: the reconcile job applies its answer; nothing runs."""
    return proposal.tool == RESOLVE_TOOL and proposal.task == RESOLVE_TASK


class ProposalStore:
    """The Approvals table: conditional, write-once puts; reads for the pages and the executor."""

    def __init__(self, dynamodb: DynamoDBClient, table_name: str) -> None:
        self._db = dynamodb
        self._table = table_name

    def propose(self, proposal: Proposal) -> tuple[Proposal, bool]:
        """Write the proposal once; returns (stored proposal, created now?). Never overwrites."""
        try:
            self._db.put_item(
                TableName=self._table,
                Item=proposal.to_item(),
                ConditionExpression="attribute_not_exists(approval_id)",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if conditional_failed(exc):
                old = exc.response.get("Item")
                return (Proposal.from_item(old) if old else proposal), False  # type: ignore[arg-type]
            raise StoreUnavailable(type(exc).__name__) from exc
        except BotoCoreError as exc:
            raise StoreUnavailable(type(exc).__name__) from exc
        return proposal, True

    def escalate(self, approval_id: str, at: int) -> bool:
        """Mark a stored proposal escalated at ``at``, once; False if it was already (or does not exist)."""
        try:
            self._db.update_item(
                TableName=self._table,
                Key={"approval_id": {"S": approval_id}},
                UpdateExpression="SET escalated_at = :at",
                ConditionExpression="attribute_exists(approval_id) AND attribute_not_exists(escalated_at)",
                ExpressionAttributeValues={":at": {"N": str(at)}},
            )
        except ClientError as exc:
            if conditional_failed(exc):
                return False
            raise StoreUnavailable(type(exc).__name__) from exc
        except BotoCoreError as exc:
            raise StoreUnavailable(type(exc).__name__) from exc
        return True

    def get(self, approval_id: str) -> Proposal | None:
        """A proposal by id, or None (an unknown or fabricated id)."""
        if not approval_id or len(approval_id.encode("utf-8", "surrogatepass")) > MAX_KEY_BYTES:
            return None  # no key DynamoDB can hold, so no proposal's: asking would be a ValidationException
        try:
            response = self._db.get_item(
                TableName=self._table, Key={"approval_id": {"S": approval_id}}, ConsistentRead=True
            )
        except (ClientError, BotoCoreError) as exc:
            raise StoreUnavailable(type(exc).__name__) from exc
        item = response.get("Item")
        return Proposal.from_item(item) if item else None

    def created_since(self, since: int) -> list[Proposal]:
        """Every proposal created since ``since`` (a filtered scan: the table holds weeks, not years)."""
        found: list[Proposal] = []
        start: dict[str, Any] | None = None
        while True:
            page, start = self.page_since(since, start)
            found.extend(page)
            if start is None:
                return found

    def page_since(
        self, since: int, start: dict[str, Any] | None = None, limit: int = 100
    ) -> tuple[list[Proposal], dict[str, Any] | None]:
        """One page of the filtered scan, and where the next page starts (None at the end)."""
        items, after = read_page(
            self._db.scan,
            start,
            TableName=self._table,
            FilterExpression="created_at >= :since",
            ExpressionAttributeValues={":since": {"N": str(since)}},
            Limit=limit,
        )
        return [Proposal.from_item(i) for i in items], after
