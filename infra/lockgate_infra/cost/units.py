"""DynamoDB capacity units as AWS bills them: item sizes, transactions, and secondary indexes.

A write costs one unit per started KB of the larger of the item before and after it (a refused
conditional write too: the condition was evaluated against the stored item); a transaction
costs two per item. Every global secondary index the item is (or was) in costs its own writes:
a new index entry is one write of the projected size, a removed one is one write, a changed
index key is both, and an entry whose projected attributes did not change costs nothing.
The images before and after each write are read from the table itself (outside the meter),
so an ``UpdateItem``'s cost is the item it leaves, not the size of its parameters.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

ENTRY_OVERHEAD_BYTES = 100  # DynamoDB adds 100 bytes to each index entry's size
Item = Mapping[str, Any]


@dataclass(frozen=True)
class Index:
    """One global secondary index: its key attributes and what it projects (None: all)."""

    keys: tuple[str, ...]
    projected: frozenset[str] | None
    name: str = ""
    partition_keys: int = 1  # the first this many keys make the partition (a multi-attribute key)


@dataclass(frozen=True)
class Table:
    """What sizing a write needs to know about a table."""

    keys: tuple[str, ...]
    indexes: tuple[Index, ...]

    def key_of(self, item: Item) -> dict[str, Any]:
        """The primary key of an item."""
        return {name: item[name] for name in self.keys if name in item}


def item_bytes(item: Item) -> int:
    """An item's size by DynamoDB's rules: attribute names plus their values."""
    return sum(len(name.encode("utf-8")) + _value_bytes(value) for name, value in item.items())


def _value_bytes(value: Mapping[str, Any]) -> int:
    kind, inner = next(iter(value.items()))
    if kind == "S":
        return len(str(inner).encode("utf-8"))
    if kind == "N":
        digits = len(str(Decimal(inner).normalize()).lstrip("-").replace(".", ""))
        return math.ceil(digits / 2) + 1
    if kind == "B":
        return len(inner)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind in ("SS", "NS", "BS"):
        return sum(_value_bytes({kind[0]: part}) for part in inner)
    if kind == "L":
        return 3 + sum(1 + _value_bytes(part) for part in inner)
    if kind == "M":
        return 3 + sum(1 + len(k.encode("utf-8")) + _value_bytes(v) for k, v in inner.items())
    return 1


def units(size: int, unit_bytes: int = 1024) -> int:
    """Capacity units for ``size`` bytes: one per started unit, at least one."""
    return max(1, math.ceil(size / unit_bytes))


def table_write_units(before: Item | None, after: Item | None, sent: Item | None = None) -> int:
    """One write's units on the table: the larger of the item before and after (or as sent)."""
    return units(max(item_bytes(before or {}), item_bytes(after or {}), item_bytes(sent or {})))


def index_write_units(table: Table, before: Item | None, after: Item | None) -> int:
    """The writes a change from ``before`` to ``after`` costs across the table's indexes."""
    return sum(units for _, _, units in index_writes(table, before, after))


def index_writes(
    table: Table, before: Item | None, after: Item | None
) -> list[tuple[Index, dict[str, Any], int]]:
    """Each index entry the change writes: the index, the entry's index key, its write units."""
    writes = []
    for index in table.indexes:
        old, new = _entry(table, index, before), _entry(table, index, after)
        if old is None and new is None or old == new:
            continue
        if old is not None and (new is None or _keys(index, old) != _keys(index, new)):
            writes.append((index, _index_key(index, old), units(item_bytes(old) + ENTRY_OVERHEAD_BYTES)))
            old = None  # the old entry is deleted
        if new is not None:
            writes.append((index, _index_key(index, new), units(item_bytes(new) + ENTRY_OVERHEAD_BYTES)))
    return writes


def _index_key(index: Index, entry: Item) -> dict[str, Any]:
    """The entry's partition in the index: its partition key's attributes (hashed together)."""
    return {key: entry[key] for key in index.keys[: index.partition_keys]}


def _entry(table: Table, index: Index, item: Item | None) -> dict[str, Any] | None:
    if item is None or any(key not in item for key in index.keys):
        return None  # sparse: the item is not in this index
    if index.projected is None:
        return dict(item)
    wanted = set(table.keys) | set(index.keys) | index.projected
    return {name: value for name, value in item.items() if name in wanted}


def _keys(index: Index, entry: Item) -> tuple[Any, ...]:
    return tuple(repr(entry[key]) for key in index.keys)


class Tables:
    """Each table's key schema and indexes, described once, and its items read outside the meter."""

    def __init__(self, quiet: Callable[[], AbstractContextManager[Any]] = nullcontext) -> None:
        self._quiet = quiet
        self._tables: dict[str, Table] = {}

    def table(self, client: Any, name: str) -> Table:
        """The table's shape (one DescribeTable per table, not metered)."""
        if name not in self._tables:
            with self._quiet():
                described = client.describe_table(TableName=name)["Table"]
            self._tables[name] = Table(
                keys=tuple(k["AttributeName"] for k in described["KeySchema"]),
                indexes=tuple(_index(i) for i in described.get("GlobalSecondaryIndexes", [])),
            )
        return self._tables[name]

    def image(self, client: Any, name: str, key: Mapping[str, Any]) -> dict[str, Any] | None:
        """The item as stored now (consistent read, not metered), or None."""
        with self._quiet():
            found = client.get_item(TableName=name, Key=dict(key), ConsistentRead=True)
        item: dict[str, Any] | None = found.get("Item")
        return item


def _index(described: Mapping[str, Any]) -> Index:
    projection = described.get("Projection", {})
    keys = tuple(k["AttributeName"] for k in described["KeySchema"])
    name = str(described.get("IndexName", ""))
    partition = sum(1 for k in described["KeySchema"] if k["KeyType"] == "HASH")
    if projection.get("ProjectionType", "ALL") == "ALL":
        return Index(keys, None, name, partition)
    return Index(keys, frozenset(projection.get("NonKeyAttributes", [])), name, partition)
