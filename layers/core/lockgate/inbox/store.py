"""DynamoDB adapter for the Inbox table. Every state change is one conditional write."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from lockgate.dynamo import conditional_failed, error_code, write_if
from lockgate.errors import Deferred, DeliveryNotFound, LeaseLost, NotClaimable, StoreUnavailable
from lockgate.inbox.models import Delivery, Status, to_attribute
from lockgate.index_shards import ShardedIndex

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

STATUS_INDEX = "by-status-sharded"
BY_STATUS = "#s = :s"
_STATUS = {"#s": "status"}
MAX_ERROR_CHARS = 500


@dataclass(frozen=True)
class Stored:
    """The result of storing a delivery: new, or the copy already there."""

    created: bool
    existing: Delivery | None = None


class InboxStore:
    """Reads and conditionally writes inbox items. The client is injected."""

    def __init__(self, dynamodb: DynamoDBClient, table_name: str) -> None:
        self._db = dynamodb
        self._table = table_name
        self._by_status = ShardedIndex(table_name, STATUS_INDEX, "received_at")

    def put_new(self, delivery: Delivery) -> Stored:
        """Store a delivery unless its key exists; a duplicate costs no second read."""
        try:
            self._db.put_item(
                TableName=self._table,
                Item=_attributes(delivery.to_item()),
                ConditionExpression="attribute_not_exists(pk)",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if conditional_failed(exc):
                return Stored(created=False, existing=_old_item(exc))
            raise StoreUnavailable(error_code(exc)) from exc
        except BotoCoreError as exc:
            raise StoreUnavailable(type(exc).__name__) from exc
        return Stored(created=True)

    def get(self, pk: str) -> Delivery:
        """The delivery with this key, read consistently."""
        try:
            response = self._db.get_item(TableName=self._table, Key={"pk": {"S": pk}}, ConsistentRead=True)
        except (ClientError, BotoCoreError) as exc:
            raise StoreUnavailable(type(exc).__name__) from exc
        if "Item" not in response:
            raise DeliveryNotFound(pk)
        return Delivery.from_item(response["Item"])

    def claim(self, pk: str, owner: str, now: int, lease_seconds: int) -> Delivery:
        """Take the lease on a waiting delivery, or on one whose lease has expired."""
        try:
            response = self._db.update_item(
                TableName=self._table,
                Key={"pk": {"S": pk}},
                UpdateExpression=(
                    "SET #s = :processing, lease_owner = :owner, lease_expires_at = :expires, "
                    "updated_at = :now, attempts = if_not_exists(attempts, :zero) + :one"
                ),
                ConditionExpression=(
                    "attribute_exists(pk) AND available_at <= :now AND "
                    "(#s = :received OR (#s = :processing AND lease_expires_at < :now))"
                ),
                ExpressionAttributeNames={"#s": "status"},
                ExpressionAttributeValues=_attributes(
                    {
                        ":processing": Status.PROCESSING.value,
                        ":received": Status.RECEIVED.value,
                        ":owner": owner,
                        ":expires": now + lease_seconds,
                        ":now": now,
                        ":zero": 0,
                        ":one": 1,
                    }
                ),
                ReturnValues="ALL_NEW",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if conditional_failed(exc):
                raise _why_not_claimable(pk, _old_item(exc), now) from exc
            raise StoreUnavailable(error_code(exc)) from exc
        except BotoCoreError as exc:
            raise StoreUnavailable(type(exc).__name__) from exc
        return Delivery.from_item(response["Attributes"])

    def finish(self, pk: str, owner: str, outcome: str, now: int) -> None:
        """Mark done; refused (LeaseLost) unless this worker still owns the lease."""
        self._owned_update(
            pk,
            owner,
            "SET #s = :done, outcome = :outcome, updated_at = :now REMOVE lease_owner, lease_expires_at",
            {":done": Status.DONE.value, ":outcome": outcome[:MAX_ERROR_CHARS], ":now": now},
        )

    def release_for_retry(self, pk: str, owner: str, error: str, available_at: int, now: int) -> None:
        """Give the delivery back to the queue after a failure, not before ``available_at``."""
        self._owned_update(
            pk,
            owner,
            "SET #s = :received, last_error = :error, available_at = :available, updated_at = :now "
            "REMOVE lease_owner, lease_expires_at",
            {
                ":received": Status.RECEIVED.value,
                ":error": error[:MAX_ERROR_CHARS],
                ":available": available_at,
                ":now": now,
            },
        )

    def defer(self, pk: str, owner: str, error: str, available_at: int, now: int) -> None:
        """Give the delivery back after its handler said "not now": no attempt used, a deferral counted."""
        self._owned_update(
            pk,
            owner,
            "SET #s = :received, last_error = :error, available_at = :available, updated_at = :now, "
            "attempts = attempts - :one, deferrals = if_not_exists(deferrals, :zero) + :one "
            "REMOVE lease_owner, lease_expires_at",
            {
                ":received": Status.RECEIVED.value,
                ":error": error[:MAX_ERROR_CHARS],
                ":available": available_at,
                ":now": now,
                ":one": 1,
                ":zero": 0,
            },
        )

    def fail(self, pk: str, owner: str, error: str, now: int) -> None:
        """Set the delivery aside as failed; conditional on owning the lease."""
        self._owned_update(
            pk,
            owner,
            "SET #s = :failed, last_error = :error, updated_at = :now REMOVE lease_owner, lease_expires_at",
            {":failed": Status.FAILED.value, ":error": error[:MAX_ERROR_CHARS], ":now": now},
        )

    def requeue_failed(self, pk: str, now: int) -> Delivery:
        """An operator's retry: a failed delivery waits again with a fresh attempt count."""
        try:
            response = self._db.update_item(
                TableName=self._table,
                Key={"pk": {"S": pk}},
                UpdateExpression=(
                    "SET #s = :received, attempts = :zero, available_at = :now, updated_at = :now"
                ),
                ConditionExpression="#s = :failed",
                ExpressionAttributeNames={"#s": "status"},
                ExpressionAttributeValues=_attributes(
                    {
                        ":received": Status.RECEIVED.value,
                        ":failed": Status.FAILED.value,
                        ":zero": 0,
                        ":now": now,
                    }
                ),
                ReturnValues="ALL_NEW",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if conditional_failed(exc):
                old = _old_item(exc)
                if old is None:
                    raise DeliveryNotFound(pk) from exc
                raise NotClaimable(f"{pk} is {old.status.value}, not failed") from exc
            raise StoreUnavailable(error_code(exc)) from exc
        return Delivery.from_item(response["Attributes"])

    def list_by_status(
        self, status: Status, limit: int = 50, *, oldest_first: bool = False
    ) -> list[Delivery]:
        """The newest (or oldest) deliveries in one status."""
        items = self._by_status.newest(
            self._db.query,
            BY_STATUS,
            {":s": {"S": status.value}},
            names=_STATUS,
            limit=limit,
            oldest_first=oldest_first,
        )
        return [Delivery.from_item(item) for item in items]

    def page_by_status(
        self,
        status: Status,
        *,
        received_before: int | None = None,
        start: dict[str, Any] | None = None,
        limit: int = 50,
    ) -> tuple[list[Delivery], dict[str, Any] | None]:
        """One page of a status (oldest first within each index shard), and where the next page
        starts (None at the end)."""
        values: dict[str, Any] = {":s": {"S": status.value}}
        sort = ""
        if received_before is not None:
            sort, values[":before"] = "received_at < :before", {"N": str(received_before)}
        items, after = self._by_status.page(
            self._db.query, start, BY_STATUS, values, sort=sort, limit=limit, names=_STATUS
        )
        return [Delivery.from_item(item) for item in items], after

    def mark_requeued(self, seen: Delivery, now: int) -> bool:
        """Note that the sweep re-queues ``seen``; False if it changed since it was read (the worker won)."""
        condition = "#s = :status AND attempts = :attempts AND "
        touched = seen.updated_at is not None
        condition += "updated_at = :seen" if touched else "attribute_not_exists(updated_at)"
        values: dict[str, Any] = {":status": seen.status.value, ":attempts": seen.attempts, ":now": now}
        if touched:
            values[":seen"] = seen.updated_at
        if seen.status is Status.PROCESSING:  # only a lease that is still the one seen, and expired
            condition += " AND lease_owner = :owner AND lease_expires_at < :now"
            values[":owner"] = seen.lease_owner or "-"
        return write_if(
            self._db.update_item,
            TableName=self._table,
            Key={"pk": {"S": seen.pk}},
            UpdateExpression="SET updated_at = :now",
            ConditionExpression=condition,
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues=_attributes(values),
        )

    def count_by_status(self) -> dict[Status, int]:
        """How many deliveries are in each status (paged COUNT queries on every index shard)."""
        return {
            status: self._by_status.count(self._db.query, BY_STATUS, {":s": {"S": status.value}}, _STATUS)
            for status in Status
        }

    def _owned_update(self, pk: str, owner: str, update: str, values: dict[str, Any]) -> None:
        values = {**values, ":owner": owner, ":processing": Status.PROCESSING.value}
        try:
            self._db.update_item(
                TableName=self._table,
                Key={"pk": {"S": pk}},
                UpdateExpression=update,
                ConditionExpression="#s = :processing AND lease_owner = :owner",
                ExpressionAttributeNames={"#s": "status"},
                ExpressionAttributeValues=_attributes(values),
            )
        except ClientError as exc:
            if conditional_failed(exc):
                raise LeaseLost(pk) from exc
            raise StoreUnavailable(error_code(exc)) from exc
        except BotoCoreError as exc:
            raise StoreUnavailable(type(exc).__name__) from exc


def _why_not_claimable(pk: str, old: Delivery | None, now: int) -> Exception:
    if old is None:
        return DeliveryNotFound(pk)
    if old.status in (Status.DONE, Status.FAILED):
        return NotClaimable(f"{pk} is already {old.status.value}")
    if old.status is Status.PROCESSING:
        wait = max(1, (old.lease_expires_at or now) - now)
        return Deferred(f"{pk} is leased by another worker", delay_seconds=wait)
    return Deferred(f"{pk} is backing off", delay_seconds=max(1, old.available_at - now))


def _attributes(values: dict[str, Any]) -> dict[str, Any]:
    return {k: to_attribute(v) for k, v in values.items()}


def _old_item(exc: ClientError) -> Delivery | None:
    item: dict[str, Any] | None = exc.response.get("Item")  # type: ignore[assignment]
    return Delivery.from_item(item) if item else None
