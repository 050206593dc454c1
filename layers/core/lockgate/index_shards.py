"""Index partitions spread over shards, so no index key is one that every event writes.

An index whose partition is a state (a delivery's status, an open ledger entry's state) and whose
sort key is a time puts every new entry on one partition, which takes at most 1,000 write units a
second. Such an index here has a multi-attribute partition key: the state and ``index_shard``, a
number from 0 to 15 the item's own key hashes to, written once when the item is made. DynamoDB
hashes the attributes together, so one state's entries spread over 16 partitions; a reader asks
every shard and merges. The count is fixed: a smaller one would hide the entries of the shards it
dropped, so it is not a setting.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from lockgate.dynamo import count_all, read_page
from lockgate.shards import shard_of

INDEX_SHARDS = 16
ATTRIBUTE = "index_shard"

Items = list[dict[str, Any]]


def index_shard(key: str) -> int:
    """The shard of an item's entries: its own key hashed, the same every time."""
    return shard_of(key, INDEX_SHARDS)


def shard_attribute(key: str) -> dict[str, dict[str, str]]:
    """The attribute an item needs to appear in a sharded index (low-level form)."""
    return {ATTRIBUTE: {"N": str(index_shard(key))}}


@dataclass(frozen=True)
class ShardedIndex:
    """One sharded index of a table: ``partition`` names its other partition attributes' condition
    (``#s = :s``), ``sort_key`` the attribute its entries are ordered by."""

    table: str
    name: str
    sort_key: str

    def newest(
        self,
        query: Callable[..., Any],
        partition: str,
        values: dict[str, Any],
        *,
        sort: str = "",
        limit: int,
        oldest_first: bool = False,
        names: dict[str, str] | None = None,
    ) -> Items:
        """The ``limit`` newest (or oldest) entries over every shard: each shard's first ``limit``, merged."""
        found: Items = []
        for shard in range(INDEX_SHARDS):
            items, _ = read_page(
                query,
                None,
                **self._request(shard, partition, values, sort, names),
                ScanIndexForward=oldest_first,
                Limit=limit,
            )
            found += items
        found.sort(key=self._order, reverse=not oldest_first)
        return found[:limit]

    def page(
        self,
        query: Callable[..., Any],
        start: dict[str, Any] | None,
        partition: str,
        values: dict[str, Any],
        *,
        sort: str = "",
        limit: int,
        names: dict[str, str] | None = None,
    ) -> tuple[Items, dict[str, Any] | None]:
        """One page, oldest first within a shard, shard after shard, and where the next page starts.

        The cursor is ``{"shard": n, "after": <key>}``; one without ``shard`` (saved before the
        index was sharded) starts from the first shard."""
        resumed = start if start and "shard" in start else {}
        shard, after = int(resumed.get("shard", 0)), resumed.get("after")
        while shard < INDEX_SHARDS:
            request = self._request(shard, partition, values, sort, names)
            items, after = read_page(query, after, **request, ScanIndexForward=True, Limit=limit)
            if after:
                return items, {"shard": shard, "after": after}
            shard += 1
            if items:
                return items, ({"shard": shard} if shard < INDEX_SHARDS else None)
        return [], None

    def count(
        self,
        query: Callable[..., Any],
        partition: str,
        values: dict[str, Any],
        names: dict[str, str] | None = None,
    ) -> int:
        """How many entries match, over every shard (paged COUNT queries)."""
        return sum(
            count_all(query, **self._request(shard, partition, values, "", names), Select="COUNT")
            for shard in range(INDEX_SHARDS)
        )

    def _request(
        self, shard: int, partition: str, values: dict[str, Any], sort: str, names: dict[str, str] | None
    ) -> dict[str, Any]:
        condition = f"{partition} AND {ATTRIBUTE} = :index_shard" + (f" AND {sort}" if sort else "")
        request: dict[str, Any] = {
            "TableName": self.table,
            "IndexName": self.name,
            "KeyConditionExpression": condition,
            "ExpressionAttributeValues": {**values, ":index_shard": {"N": str(shard)}},
        }
        if names:
            request["ExpressionAttributeNames"] = names
        return request

    def _order(self, item: dict[str, Any]) -> Decimal:
        return Decimal(item[self.sort_key]["N"])
