"""Each job's row in the State table: its lease, saved cursor, heartbeat and a queued run.

One item per job (``pk = "jobs"``, ``sk = <name>``), so ``lockgate jobs status`` and the watchdog
read every job with one query. Every write is one conditional update: taking the lease expects
it free or expired; everything after expects this run still owns it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from lockgate.dynamo import conditional_failed as _conditional_failed
from lockgate.dynamo import error_code as _code
from lockgate.dynamo import read_page, write_if
from lockgate.errors import LeaseLost, StoreUnavailable
from lockgate.inbox.models import to_attribute

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

PARTITION = "jobs"
MAX_ERROR_CHARS = 500


@dataclass(frozen=True)
class JobState:
    """What the State table knows about one job."""

    name: str
    lease_owner: str | None = None
    lease_expires_at: float | None = None
    lease_scheduled_time: str | None = None
    queued_time: str | None = None  # one run asked for while another held the lease
    cursor: Mapping[str, Any] | None = None
    cursor_scheduled_time: str | None = None  # the occurrence the cursor belongs to
    last_success_at: float | None = None  # the heartbeat
    last_scheduled_time: str | None = None  # the last occurrence finished
    last_counts: Mapping[str, int] = field(default_factory=dict)
    last_failure_at: float | None = None
    last_error: str | None = None

    def leased(self, now: float) -> bool:
        """Whether a run holds an unexpired lease."""
        return self.lease_owner is not None and (self.lease_expires_at or 0) >= now

    @classmethod
    def from_item(cls, item: Mapping[str, Any]) -> JobState:
        """From a low-level DynamoDB item."""
        plain = {k: next(iter(v.values())) for k, v in item.items()}
        return cls(
            name=plain["sk"],
            lease_owner=plain.get("lease_owner"),
            lease_expires_at=_number(plain.get("lease_expires_at")),
            lease_scheduled_time=plain.get("lease_scheduled_time"),
            queued_time=plain.get("queued_time"),
            cursor=json.loads(plain["cursor"]) if "cursor" in plain else None,
            cursor_scheduled_time=plain.get("cursor_scheduled_time"),
            last_success_at=_number(plain.get("last_success_at")),
            last_scheduled_time=plain.get("last_scheduled_time"),
            last_counts=json.loads(plain.get("last_counts", "{}")),
            last_failure_at=_number(plain.get("last_failure_at")),
            last_error=plain.get("last_error"),
        )


@dataclass(frozen=True)
class Acquired:
    """The outcome of asking for the lease: taken (with the job's state), or held by another run."""

    taken: bool
    state: JobState


class JobStateStore:
    """Conditional reads and writes of job rows; the client is injected."""

    def __init__(self, dynamodb: DynamoDBClient, table_name: str) -> None:
        self._db = dynamodb
        self._table = table_name

    def acquire(self, name: str, owner: str, scheduled_time: str, now: float, expires_at: float) -> Acquired:
        """Take the lease if nobody holds it or it expired (a crashed run's lease lapses)."""
        try:
            response = self._db.update_item(
                TableName=self._table,
                Key=_key(name),
                UpdateExpression=(
                    "SET lease_owner = :owner, lease_expires_at = :expires, lease_scheduled_time = :t"
                ),
                ConditionExpression="attribute_not_exists(lease_owner) OR lease_expires_at < :now",
                ExpressionAttributeValues=_values(
                    {":owner": owner, ":expires": expires_at, ":t": scheduled_time, ":now": now}
                ),
                ReturnValues="ALL_NEW",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if _conditional_failed(exc):
                old: dict[str, Any] = exc.response.get("Item") or {"sk": {"S": name}}  # type: ignore[assignment]
                return Acquired(False, JobState.from_item(old))
            raise StoreUnavailable(_code(exc)) from exc
        except BotoCoreError as exc:
            raise StoreUnavailable(type(exc).__name__) from exc
        return Acquired(True, JobState.from_item(response["Attributes"]))

    def queue_one(self, name: str, scheduled_time: str, now: float) -> bool:
        """Ask the lease holder for one more run; False if one is already queued or the lease is gone."""
        return write_if(
            self._db.update_item,
            TableName=self._table,
            Key=_key(name),
            UpdateExpression="SET queued_time = :t",
            ConditionExpression=(
                "attribute_exists(lease_owner) AND lease_expires_at >= :now "
                "AND attribute_not_exists(queued_time)"
            ),
            ExpressionAttributeValues=_values({":t": scheduled_time, ":now": now}),
        )

    def record(
        self,
        name: str,
        owner: str,
        *,
        scheduled_time: str,
        done: bool,
        cursor: Mapping[str, Any] | None,
        counts: Mapping[str, int],
        now: float,
    ) -> None:
        """The heartbeat after a run that returned: finished (cursor cleared) or stopped with a cursor."""
        values: dict[str, Any] = {":now": now, ":counts": json.dumps(dict(counts), sort_keys=True)}
        if done:
            update = "SET last_success_at = :now, last_counts = :counts, last_scheduled_time = :t "
            update += "REMOVE #cursor, cursor_scheduled_time"
            values[":t"] = scheduled_time
        else:
            update = "SET last_success_at = :now, last_counts = :counts, #cursor = :cursor, "
            update += "cursor_scheduled_time = :t"
            values.update({":cursor": json.dumps(dict(cursor or {}), sort_keys=True), ":t": scheduled_time})
        self._owned(name, owner, update, values, {"#cursor": "cursor"})

    def record_failure(self, name: str, owner: str, error: str, now: float) -> None:
        """Note the failure and give the lease back, so Scheduler's retry can run at once."""
        self._owned(
            name,
            owner,
            "SET last_failure_at = :now, last_error = :error REMOVE lease_owner, lease_expires_at",
            {":now": now, ":error": error[:MAX_ERROR_CHARS]},
        )

    def release(self, name: str, owner: str, *, take_queued: bool) -> str | None:
        """Give the lease back; with ``take_queued`` also clear (and return) a queued run's time."""
        update = "REMOVE lease_owner, lease_expires_at, lease_scheduled_time"
        if take_queued:
            update += ", queued_time"
        old = self._owned(name, owner, update, {}, None, returning="ALL_OLD")
        return old.queued_time if take_queued and old is not None else None

    def all(self) -> list[JobState]:
        """Every job's row (one query)."""
        states: list[JobState] = []
        start: dict[str, Any] | None = None
        while True:
            items, start = read_page(
                self._db.query,
                start,
                TableName=self._table,
                KeyConditionExpression="pk = :pk",
                ExpressionAttributeValues={":pk": {"S": PARTITION}},
                ConsistentRead=True,
            )
            states += [JobState.from_item(item) for item in items]
            if not start:
                return states

    def _owned(
        self,
        name: str,
        owner: str,
        update: str,
        values: dict[str, Any],
        names: dict[str, str] | None = None,
        returning: str = "NONE",
    ) -> JobState | None:
        kwargs: dict[str, Any] = {
            "TableName": self._table,
            "Key": _key(name),
            "UpdateExpression": update,
            "ConditionExpression": "lease_owner = :me",
            "ExpressionAttributeValues": _values({**values, ":me": owner}),
            "ReturnValues": returning,
        }
        if names:
            kwargs["ExpressionAttributeNames"] = names
        try:
            response = self._db.update_item(**kwargs)
        except ClientError as exc:
            if _conditional_failed(exc):
                raise LeaseLost(f"job {name}") from exc
            raise StoreUnavailable(_code(exc)) from exc
        except BotoCoreError as exc:
            raise StoreUnavailable(type(exc).__name__) from exc
        attributes = response.get("Attributes")
        return JobState.from_item(attributes) if attributes else None


def _key(name: str) -> dict[str, Any]:
    return {"pk": {"S": PARTITION}, "sk": {"S": name}}


def _values(values: Mapping[str, Any]) -> dict[str, Any]:
    return {k: to_attribute(v) for k, v in values.items()}


def _number(value: Any) -> float | None:
    return None if value is None else float(value)
