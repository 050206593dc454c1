"""Where each proposal's Slack message is: the notifier's own row in the State table.

One row per proposal (``pk = slack-message#<approval id>``, ``sk = message``; the notifier's role
may touch no other part of the table). The notifier claims it with a conditional put before it
posts, so a retried stream record finds the claim instead of posting again; it then keeps the
message's channel and ``ts`` (to update it whoever decides) and a digest of what it shows (so an
update that would change nothing is not sent).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from lockgate.approvals.proposals import RETENTION_SECONDS
from lockgate.dynamo import conditional_failed, error_code, write_if
from lockgate.errors import StoreUnavailable

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

PREFIX = "slack-message#"
SORT_KEY = "message"


@dataclass(frozen=True)
class SlackPost:
    """A proposal's message: claimed at ``claimed_at``, posted as ``ts`` ("" until known)."""

    approval_id: str
    channel: str
    claimed_at: int
    ts: str = ""
    shown: str = ""  # digest of the text and blocks it shows now

    @classmethod
    def from_item(cls, item: dict[str, Any]) -> SlackPost:
        """From a low-level DynamoDB item."""
        return cls(
            approval_id=item["approval_id"]["S"],
            channel=item["channel"]["S"],
            claimed_at=int(item["claimed_at"]["N"]),
            ts=item.get("ts", {}).get("S", ""),
            shown=item.get("shown", {}).get("S", ""),
        )


def key(approval_id: str) -> dict[str, Any]:
    """The row's key."""
    return {"pk": {"S": PREFIX + approval_id}, "sk": {"S": SORT_KEY}}


class SlackPostStore:
    """The notifier's rows: claim, then the posted message's ts, then what it shows."""

    def __init__(self, dynamodb: DynamoDBClient, table_name: str) -> None:
        self._db = dynamodb
        self._table = table_name

    def claim(self, approval_id: str, channel: str, now: int, expires_at: int) -> SlackPost | None:
        """Claim the right to post; None when claimed now, else the row an earlier attempt left."""
        try:
            self._db.put_item(
                TableName=self._table,
                Item={
                    **key(approval_id),
                    "approval_id": {"S": approval_id},
                    "channel": {"S": channel},
                    "claimed_at": {"N": str(now)},
                    "ttl": {"N": str(max(now, expires_at) + RETENTION_SECONDS)},
                },
                ConditionExpression="attribute_not_exists(pk)",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if conditional_failed(exc):
                old = exc.response.get("Item")
                if old:  # the duplicate costs no second read
                    return SlackPost.from_item(old)  # type: ignore[arg-type]
                found = self.get(approval_id)
                if found is not None:
                    return found
            raise StoreUnavailable(error_code(exc)) from exc
        except BotoCoreError as exc:
            raise StoreUnavailable(type(exc).__name__) from exc
        return None

    def posted(self, approval_id: str, ts: str, shown: str) -> bool:
        """Keep the message's ts (once: False if another attempt kept one first) and what it shows."""
        return write_if(
            self._db.update_item,
            TableName=self._table,
            Key=key(approval_id),
            UpdateExpression="SET ts = :ts, shown = :shown",
            ConditionExpression="attribute_exists(pk) AND attribute_not_exists(ts)",
            ExpressionAttributeValues={":ts": {"S": ts}, ":shown": {"S": shown}},
        )

    def shown(self, approval_id: str, ts: str, shown: str) -> None:
        """Record what the message ``ts`` shows now (after an update)."""
        write_if(
            self._db.update_item,
            TableName=self._table,
            Key=key(approval_id),
            UpdateExpression="SET shown = :shown",
            ConditionExpression="ts = :ts",
            ExpressionAttributeValues={":ts": {"S": ts}, ":shown": {"S": shown}},
        )

    def get(self, approval_id: str) -> SlackPost | None:
        """The proposal's row (read consistently), or None before any claim."""
        try:
            response = self._db.get_item(TableName=self._table, Key=key(approval_id), ConsistentRead=True)
        except (ClientError, BotoCoreError) as exc:
            raise StoreUnavailable(type(exc).__name__) from exc
        item = response.get("Item")
        return SlackPost.from_item(item) if item else None
