"""prune: report what is past retention, and delete only what DynamoDB's TTL can never remove.

TTL does most of the work: deliveries (``ttl`` = received + ``inbox.retention_days``), runs and
their steps (30 days) and ledger operations (90 days) all carry a ``ttl`` attribute, and TTL
deletes them some time (often days) after it passes. This job counts those items and their size,
so a backlog of expired-but-present data is visible. It deletes only items TTL cannot cover:
settled deliveries (done/failed), runs and settled operations that have no ``ttl`` attribute
(written by older versions or edited by hand) and are older than the same retention. Open
deliveries and open operations (IN_PROGRESS/UNKNOWN) are never deleted. Request bodies in S3
expire through the bucket's lifecycle rule. Each delete is conditional on what the scan saw.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lockgate.actions import ledger
from lockgate.agent import runs
from lockgate.config import InboxConfig
from lockgate.dynamo import Page, read_page, write_if
from lockgate.jobs.contract import JobContext, JobResult

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

NAME = "prune"
DAY = 86_400
PAGE_SIZE = 200
SETTLED_DELIVERIES = ("done", "failed")
SETTLED_OPERATIONS = ("SUCCEEDED", "FAILED")


@dataclass(frozen=True)
class Family:
    """One kind of item: how to recognise it, when it was last touched, and what may be deleted."""

    name: str
    table: str
    key: tuple[str, ...]
    matches: Callable[[dict[str, Any]], bool]
    retention_seconds: int
    status_attribute: str | None  # the delete is conditional on this attribute's value as seen
    settled: tuple[str, ...] = ()


class Prune:
    """The ``prune`` job."""

    def __init__(
        self, *, dynamodb: DynamoDBClient, inbox_table: str, state_table: str, settings: InboxConfig
    ) -> None:
        self._db = dynamodb
        self._tables = (inbox_table, state_table)
        self._families = (
            Family(
                "deliveries",
                inbox_table,
                ("pk",),
                lambda item: True,
                settings.retention_days * DAY,
                "status",
                SETTLED_DELIVERIES,
            ),
            Family("runs", state_table, ("pk", "sk"), _prefixed("run#"), runs.RETENTION_SECONDS, None),
            Family(
                "operations",
                state_table,
                ("pk", "sk"),
                _prefixed("op#"),
                ledger.RETENTION_SECONDS,
                "state",
                SETTLED_OPERATIONS,
            ),
        )

    def __call__(self, ctx: JobContext) -> JobResult:
        """Scan each table page by page from the cursor; count, and delete what TTL cannot."""
        now = int(ctx.clock.now())
        counts: dict[str, int] = {}
        for family in self._families:
            for suffix in ("past_retention", "past_retention_bytes", "deleted"):
                counts[f"{family.name}_{suffix}"] = 0
        counts.update({k: int(v) for k, v in (ctx.cursor or {}).get("counts", {}).items()})
        table_index = int((ctx.cursor or {}).get("table", 0))
        start: dict[str, Any] | None = (ctx.cursor or {}).get("start")
        for n in range(table_index, len(self._tables)):
            while True:
                if ctx.should_stop():
                    cursor = {"table": n, "start": start, "counts": counts}
                    return JobResult(done=False, cursor=cursor, counts=counts)
                items, start = self._scan(self._tables[n], start)
                for item in items:
                    self._visit(self._tables[n], item, now, counts)
                if start is None:
                    break
        for name, value in counts.items():
            unit = "Bytes" if name.endswith("bytes") else "Count"
            ctx.metrics.add_metric(name=f"Prune_{name}", unit=unit, value=value)
        return JobResult(done=True, counts=counts)

    def _visit(self, table: str, item: dict[str, Any], now: int, counts: dict[str, int]) -> None:
        family = next((f for f in self._families if f.table == table and f.matches(item)), None)
        if family is None:
            return  # leases, spend, caches: not this job's
        ttl = _number(item, "ttl")
        if ttl is not None:
            if ttl < now:  # expired, TTL has not removed it yet
                counts[f"{family.name}_past_retention"] += 1
                counts[f"{family.name}_past_retention_bytes"] += item_size(item)
            return
        touched = max(_number(item, k) or 0 for k in ("updated_at", "created_at", "received_at", "at"))
        if touched >= now - family.retention_seconds:
            return
        seen = item.get(family.status_attribute, {}).get("S") if family.status_attribute else None
        if family.status_attribute and seen not in family.settled:
            return  # still open: never pruned
        counts[f"{family.name}_past_retention"] += 1
        counts[f"{family.name}_past_retention_bytes"] += item_size(item)
        if self._delete(family, item, seen):
            counts[f"{family.name}_deleted"] += 1

    def _scan(self, table: str, start: dict[str, Any] | None) -> Page:
        return read_page(self._db.scan, start, TableName=table, Limit=PAGE_SIZE)

    def _delete(self, family: Family, item: dict[str, Any], seen: str | None) -> bool:
        """Delete if it still has no ttl and is still in the state seen; False if it changed."""
        kwargs: dict[str, Any] = {
            "TableName": family.table,
            "Key": {k: item[k] for k in family.key},
            "ConditionExpression": "attribute_not_exists(#ttl)",
            "ExpressionAttributeNames": {"#ttl": "ttl"},
        }
        if family.status_attribute and seen is not None:
            kwargs["ConditionExpression"] += " AND #st = :seen"
            kwargs["ExpressionAttributeNames"]["#st"] = family.status_attribute
            kwargs["ExpressionAttributeValues"] = {":seen": {"S": seen}}
        return write_if(self._db.delete_item, **kwargs)


def item_size(item: dict[str, Any]) -> int:
    """Approximate stored size in bytes (names plus values), as DynamoDB counts item size."""
    return sum(len(name.encode()) + _value_size(value) for name, value in item.items())


def _value_size(value: dict[str, Any]) -> int:
    ((kind, raw),) = value.items()
    if kind in ("S", "N"):
        return len(str(raw).encode())
    if kind == "B":
        return len(raw)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "M":
        return 3 + item_size(raw)
    if kind == "L":
        return 3 + sum(_value_size(v) for v in raw)
    return sum(len(str(v).encode()) for v in raw)  # sets


def _number(item: dict[str, Any], name: str) -> int | None:
    raw = item.get(name, {}).get("N")
    return None if raw is None else int(float(raw))


def _prefixed(prefix: str) -> Callable[[dict[str, Any]], bool]:
    return lambda item: str(item.get("pk", {}).get("S", "")).startswith(prefix)
