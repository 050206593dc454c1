"""Refuse an event older than the newest one already applied to the same entity."""

from __future__ import annotations

from typing import TYPE_CHECKING

from botocore.exceptions import BotoCoreError, ClientError

from lockgate.clock import Clock
from lockgate.dynamo import conditional_failed
from lockgate.errors import StaleEvent, StoreUnavailable

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


class EntityVersions:
    """Per-entity high-water marks of provider event time, in the State table."""

    def __init__(
        self, dynamodb: DynamoDBClient, table_name: str, clock: Clock, ttl_seconds: int = 30 * 86_400
    ) -> None:
        self._db = dynamodb
        self._clock = clock
        self._table = table_name
        self._ttl_seconds = ttl_seconds

    def apply_if_newer(self, entity: str, event_time: float, delivery_id: str) -> None:
        """Record this event as the newest for ``entity``; StaleEvent if a newer one was applied.

        The same delivery may apply again (a retry after a crash); an equal
        timestamp from a different delivery is treated as stale, so the first
        one applied wins and the order is deterministic.
        """
        try:
            self._db.update_item(
                TableName=self._table,
                Key={"pk": {"S": f"entity#{entity}"}, "sk": {"S": "version"}},
                UpdateExpression="SET event_time = :t, delivery_id = :d, #ttl = :ttl",
                ConditionExpression=(
                    "attribute_not_exists(pk) OR event_time < :t OR (event_time = :t AND delivery_id = :d)"
                ),
                ExpressionAttributeNames={"#ttl": "ttl"},
                ExpressionAttributeValues={
                    ":t": {"N": repr(float(event_time))},
                    ":d": {"S": delivery_id},
                    ":ttl": {"N": str(int(self._clock.now()) + self._ttl_seconds)},
                },
            )
        except ClientError as exc:
            if conditional_failed(exc):
                raise StaleEvent(f"{entity}: a newer event was already applied") from exc
            raise StoreUnavailable(type(exc).__name__) from exc
        except BotoCoreError as exc:
            raise StoreUnavailable(type(exc).__name__) from exc
