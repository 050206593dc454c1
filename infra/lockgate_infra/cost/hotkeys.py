"""The hot-key meter: capacity units per event on each DynamoDB item key, and the ceiling they set.

DynamoDB serves one partition at most 1,000 write units and 3,000 read units a second (AWS,
"Understanding DynamoDB warm throughput in different scenarios": "each individual partition is
limited to 1,000 write units per second and 3,000 read units per second"), and one item never
spans partitions. So a key that takes ``u`` write units per event caps the whole deployment at
``1,000 / u`` events a second, however many partitions the table has: the busiest key sets the
ceiling. Index entries count on their index's partition key (``Inbox.by-status received``):
a global secondary index short of write capacity throttles the table's writes too, and an
index's sort key that only grows (a time) keeps its new entries on one partition. A sharded
index's partition names its shard (``Inbox.by-status-sharded received#s7``); the item's own key
hashed picks it, so at a rate its entries spread evenly over the ``INDEX_SHARDS`` partitions and
each takes that share of the measured total (a sample of a few dozen events would spread unevenly).

Keys are named readably (``State spend#2026-12-02#s3 / global``) and grouped into logical
counters, a day and a shard number normalised away (``State spend#DAY#s* / global``). A key of
one entity (one delivery, run, proposal, order, sender, ...) is reported apart and left out of
the ceiling: in a sample of a few customers its keys look hot, deployed its rate is that one
entity's. The families are listed here (``ENTITY_KEYS``); any key not listed counts.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lockgate.index_shards import ATTRIBUTE, INDEX_SHARDS

PARTITION_WRITE_UNITS = 1_000  # per second, per partition (AWS: warm-throughput scenarios)
PARTITION_READ_UNITS = 3_000
LIMITS_SOURCE = (
    "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/warm-throughput-scenarios.html"
)

_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
_SHARD = re.compile(r"#s\d+\b")
# (table, pattern on "pk / sk", the entity one such key belongs to): first match wins.
ENTITY_KEYS: tuple[tuple[str, re.Pattern[str], str], ...] = (
    ("Inbox", re.compile(r""), "delivery"),
    ("Approvals", re.compile(r"^ap_"), "proposal"),
    ("Decisions", re.compile(r"^ap_"), "proposal"),
    ("State", re.compile(r"^run#"), "run"),
    ("State", re.compile(r"^op#"), "operation"),
    ("State", re.compile(r"^respcache#"), "request"),
    ("State", re.compile(r"^pending#[^#]+#sender#"), "sender"),
    ("State", re.compile(r"^pending#[^#]+#[^#]+#[0-9a-f]+ / slot$"), "target"),
    ("ShopMail", re.compile(r""), "message"),
    ("ShopMail.by-sender", re.compile(r""), "sender"),
    ("ShopOrders", re.compile(r""), "order"),
    ("ShopOrders.by-customer", re.compile(r""), "customer"),
    ("ShopPayments", re.compile(r""), "payment"),
)


def table_name(physical: str) -> str:
    """A table's short name: ``lockgate-prod-StateTable`` is ``State``."""
    return physical.rsplit("-", 1)[-1].removesuffix("Table")


def key_name(table: str, key: Mapping[str, Any], index: str | None = None) -> str:
    """A readable item key: the short table name (and index), then its key values, `` / `` between."""
    parts: list[str] = []
    for name, value in key.items():
        text = str(next(iter(value.values())))
        if name == ATTRIBUTE and parts:  # a sharded index's partition: its shard, as counters show one
            parts[-1] += f"#s{text}"
        else:
            parts.append(text)
    values = " / ".join(parts)
    where = table_name(table) + (f".{index}" if index else "")
    return f"{where} {values}"


def logical_name(name: str) -> str:
    """The counter a key belongs to: its day as ``DAY`` and its shard as ``s*``."""
    return _SHARD.sub("#s*", _DAY.sub("DAY", name))


def entity_of(name: str) -> str | None:
    """The one entity whose key this is (``"order"``), or None for a key any event may write."""
    where, _, rest = name.partition(" ")
    for table, pattern, entity in ENTITY_KEYS:
        if table == where and pattern.search(rest):
            return entity
    return None


@dataclass
class KeyLoad:
    """Write and read units over the sample, per item key (index entries by their index key)."""

    writes: Counter[str] = field(default_factory=Counter)
    reads: Counter[str] = field(default_factory=Counter)

    def shared(self, units: Counter[str]) -> Counter[str]:
        """The keys any event may write: the ones that set the ceiling."""
        return Counter({name: n for name, n in units.items() if entity_of(name) is None})

    def per_partition(self, units: Counter[str]) -> Counter[str]:
        """Units per partition: a sharded index's shards each take an even share of their total
        (named ``...#s*``), every other key as measured."""
        spread: Counter[str] = Counter()
        for name, n in units.items():
            if is_index(name) and _SHARD.search(name):
                spread[logical_name(name)] += n / INDEX_SHARDS  # type: ignore[assignment]  # units are fractional
            else:
                spread[name] += n
        return spread

    def by_counter(self, units: Counter[str]) -> Counter[str]:
        """Units per logical counter (a day's shards together)."""
        grouped: Counter[str] = Counter()
        for name, n in units.items():
            grouped[logical_name(name)] += n
        return grouped


@dataclass(frozen=True)
class Ceiling:
    """Events per second at which the busiest shared key reaches its partition's limit."""

    events_per_second: float
    key: str
    units_per_event: float
    kind: str  # "write" or "read"


def is_index(name: str) -> bool:
    """Whether a key is an index partition (``Inbox.by-status received``), not an item's key."""
    return "." in name.partition(" ")[0]


def ceiling(load: KeyLoad, events: int, *, indexes: bool = True) -> Ceiling | None:
    """The lower of the write and read ceilings over the shared keys (None: no key was touched);
    ``indexes=False``: over the items' own keys only."""
    found = []
    for kind, units, limit in (
        ("write", load.writes, PARTITION_WRITE_UNITS),
        ("read", load.reads, PARTITION_READ_UNITS),
    ):
        shared = load.per_partition(load.shared(units))
        busiest = Counter({k: n for k, n in shared.items() if indexes or not is_index(k)}).most_common(1)
        if busiest:
            name, total = busiest[0]
            per_event = total / events
            found.append(Ceiling(limit / per_event, name, per_event, kind))
    return min(found, key=lambda c: c.events_per_second) if found else None


def render_keys(load: KeyLoad, events: int, top: int = 6) -> list[str]:
    """The report's hot-key lines: the busiest counters, entity keys and reads, then the ceiling."""
    lines = [
        f"Hot keys: DynamoDB serves one partition at most {PARTITION_WRITE_UNITS:,} write and "
        f"{PARTITION_READ_UNITS:,} read units a second (AWS docs, warm throughput).",
        "  busiest counters any event may write, write units per event: all its keys, its busiest key, keys",
    ]
    shared = load.shared(load.writes)
    for counter, total in load.by_counter(shared).most_common(top):
        keys = [n for name, n in shared.items() if logical_name(name) == counter]
        lines.append(f"    {total / events:5.2f} {max(keys) / events:5.2f} {len(keys):3d}  {counter}")
    entities = Counter({name: n for name, n in load.writes.items() if entity_of(name) is not None})
    lines.append("  busiest keys of one entity (not in the ceiling: deployed, their rate is that entity's)")
    for name, total in entities.most_common(3):
        lines.append(f"    {total / events:5.2f}  {name} (one {entity_of(name)})")
    reads = load.shared(load.reads).most_common(1)
    if reads:
        name, total = reads[0]
        lines.append(f"  busiest key any event may read: {total / events:.2f} read units per event, {name}")
    found, items = ceiling(load, events), ceiling(load, events, indexes=False)
    if found is not None:
        lines.append(f"Ceiling: {_reaches(found)}")
    if items is not None and items != found:
        lines.append(f"  item keys alone (no index partition): {_reaches(items)}")
    return lines


def _reaches(found: Ceiling) -> str:
    limit = PARTITION_WRITE_UNITS if found.kind == "write" else PARTITION_READ_UNITS
    return (
        f"{found.events_per_second:,.0f} events/s, when {found.key} "
        f"({found.units_per_event:.2f} {found.kind} units per event) reaches {limit:,} a second"
    )
