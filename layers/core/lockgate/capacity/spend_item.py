"""The day's spend item: every daily counter (global, and each capped task) on one State item.

``spend#YYYY-MM-DD`` / ``global`` holds the global counter as ``remaining``, ``spent`` and ``cap``
(the names an item of the earlier layout had), and each task's as ``task#NAME|remaining`` and so
on. One item means a hold on both the global and the task's counter is ONE conditional update
(atomic without a transaction: one write unit, where a two-item transaction costs four) and a
settle is one more. Versions before kept one item per counter (``task#NAME`` items); a day they
opened is read on: the global counter is the same item, and a task's counter carries over its
remaining and spent the first time this version holds on it (``SpendCaps._open_task``).

Sharded (``[capacity] shards``, ``lockgate.shards``), the day is ``shards`` items
``spend#YYYY-MM-DD#s<i>`` / ``global``, each with its share of every cap; the unsharded item
``spend#YYYY-MM-DD`` / ``global`` is then the day's anchor: it records the day's shard count
(the first opener's) and keeps what an earlier, unsharded version spent that day, which the
shards take off their shares when they open. With one shard the day's item is the anchor's key,
the layout before sharding.

The bound, stated: no shard ever goes below zero, so the caps are never overspent (beyond a
settle that costs more than its estimate, as unsharded); what sharding costs is budget left
unused: a call may be refused while up to one call's estimate per shard is left in total
(``shards`` × the estimate). A call whose estimate is larger than a shard's share is refused for
the day: keep each cap at least ``shards`` × the largest call. The day's shard count is the
first opener's (on the anchor), so a change to ``shards`` applies from the next UTC day; what an
unsharded version spent that day, before a process first read the anchor, is taken off the
shares. Spend an older version still records on the anchor after that (the minutes a deploy
overlaps) is not counted again.

These are the request builders; ``lockgate.capacity.spend`` reads the refusals and writes.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from lockgate.shards import sharded

GLOBAL = "global"
SHARDS = "shards"  # the anchor's attribute: how many shards the day was opened with


def key(day: str, sk: str = GLOBAL) -> dict[str, Any]:
    """The day's anchor (or, with ``sk``, an item of the earlier one-per-counter layout)."""
    return {"pk": {"S": f"spend#{day}"}, "sk": {"S": sk}}


def shard_key(day: str, shard: int, shards: int) -> dict[str, Any]:
    """One shard of the day's counters (the anchor itself with one shard)."""
    return {"pk": {"S": sharded(f"spend#{day}", shard, shards)}, "sk": {"S": GLOBAL}}


def usd(value: float) -> Decimal:
    """Dollars as the exact decimal stored (to the millionth)."""
    return Decimal(f"{value:.6f}")


def attrs(counter: str) -> tuple[str, str, str]:
    """A counter's remaining, spent and cap attributes on the day's item."""
    if counter == GLOBAL:
        return "remaining", "spent", "cap"
    return f"{counter}|remaining", f"{counter}|spent", f"{counter}|cap"


def number(item: Mapping[str, Any], name: str) -> Decimal | None:
    """A number attribute, or None when it is missing or not a number."""
    value = item.get(name)
    if not isinstance(value, dict) or "N" not in value:
        return None
    try:
        return Decimal(value["N"])
    except InvalidOperation:
        return None


def hold_update(
    table: str,
    where: tuple[str, int, int],
    counters: tuple[str, ...],
    estimate: Decimal,
    marks: Mapping[str, Decimal],
    opening: Mapping[str, tuple[Decimal, Decimal]] | None = None,
    ttl: int = 0,
) -> dict[str, Any]:
    """Take ``estimate`` off every counter if each keeps it (and its near-cap mark, where given).

    With a mark, the counter must stay strictly above it, so a hold that lands exactly on 80%
    spent is refused and counted as the crossing (then held without it). The type test comes
    first: a string counter must fail the condition, not compare. ``where`` is (day, shard,
    shards); unsharded, a day whose anchor says it is sharded refuses (ALL_OLD says how many).
    ``opening`` (a shard's (remaining, cap) per counter) opens a counter the shard lacks in the
    same write, when the hold fits what it opens with: no refusal and no put to open a shard
    (``ttl``: the epoch second a shard it opens expires).
    """
    day, shard, shards = where
    names: dict[str, str] = {}
    values: dict[str, Any] = {":est": {"N": str(estimate)}, ":n": {"S": "N"}}
    sets, adds, conditions = [], [], []
    for i, counter in enumerate(counters):
        names[f"#r{i}"], names[f"#s{i}"], names[f"#c{i}"] = attrs(counter)
        least = estimate + marks.get(counter, Decimal(0))
        values[f":least{i}"] = {"N": str(least)}
        compare = ">" if counter in marks else ">="
        held = f"attribute_type(#r{i}, :n) AND #r{i} {compare} :least{i}"
        left, cap = (opening or {}).get(counter, (None, None))
        if left is None or cap is None or not (left > least if counter in marks else left >= least):
            del names[f"#c{i}"]
            sets.append(f"#r{i} = #r{i} - :est")
            conditions.append(held)
        else:
            values[f":open{i}"], values[f":cap{i}"] = {"N": str(left)}, {"N": str(cap)}
            sets += [
                f"#r{i} = if_not_exists(#r{i}, :open{i}) - :est",
                f"#c{i} = if_not_exists(#c{i}, :cap{i})",
            ]
            conditions.append(f"(attribute_not_exists(#r{i}) OR ({held}))")
        adds.append(f"#s{i} :est")
    if shards == 1:
        names["#shards"] = SHARDS
        conditions.append("attribute_not_exists(#shards)")
    elif opening:
        names["#ttl"], values[":ttl"] = "ttl", {"N": str(ttl)}
        sets.append("#ttl = if_not_exists(#ttl, :ttl)")
    return {
        "TableName": table,
        "Key": shard_key(day, shard, shards),
        "UpdateExpression": f"SET {', '.join(sets)} ADD {', '.join(adds)}",
        "ConditionExpression": " AND ".join(conditions),
        "ExpressionAttributeNames": names,
        "ExpressionAttributeValues": values,
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
    }


def adjust_update(
    table: str, where: tuple[str, int, int], counters: tuple[str, ...], refund: Decimal
) -> dict[str, Any]:
    """Give ``refund`` back to every counter of a shard (negative: charge more); never creates one."""
    names: dict[str, str] = {}
    for i, counter in enumerate(counters):
        names[f"#r{i}"], names[f"#s{i}"], _ = attrs(counter)
    each = range(len(counters))
    return {
        "TableName": table,
        "Key": shard_key(*where),
        "UpdateExpression": "SET "
        + ", ".join(f"#r{i} = #r{i} + :refund" for i in each)
        + " ADD "
        + ", ".join(f"#s{i} :charge" for i in each),
        "ConditionExpression": " AND ".join(f"attribute_type(#r{i}, :n)" for i in each),
        "ExpressionAttributeNames": names,
        "ExpressionAttributeValues": {
            ":refund": {"N": str(refund)},
            ":charge": {"N": str(-refund)},
            ":n": {"S": "N"},
        },
    }


def day_item(
    where: tuple[str, int, int], caps: Mapping[str, tuple[Decimal, Decimal]], now: int, ttl_seconds: int
) -> dict[str, Any]:
    """A new day's item (or shard): every counter's (remaining, cap), nothing spent yet."""
    item = {**shard_key(*where), "opened_at": {"N": str(now)}, "ttl": {"N": str(now + ttl_seconds)}}
    for counter, (left, cap) in caps.items():
        item.update(zip(attrs(counter), ({"N": str(left)}, {"N": "0"}, {"N": str(cap)}), strict=True))
    return item


def anchor_update(day: str, shards: int, now: int, ttl_seconds: int) -> dict[str, Any]:
    """Record the day's shard count on its anchor, unless an opener did first (ALL_NEW says which)."""
    return {
        "Key": key(day),
        "UpdateExpression": "SET #shards = if_not_exists(#shards, :n), #ttl = if_not_exists(#ttl, :ttl)",
        "ExpressionAttributeNames": {"#shards": SHARDS, "#ttl": "ttl"},
        "ExpressionAttributeValues": {":n": {"N": str(shards)}, ":ttl": {"N": str(now + ttl_seconds)}},
        "ReturnValues": "ALL_NEW",
    }


def task_opening(
    where: tuple[str, int, int], counter: str, remaining: Decimal, spent: Decimal, cap: Decimal
) -> dict[str, Any]:
    """Add a task's counter to a day's item (or shard) that lacks it (only if it still does)."""
    return {
        "Key": shard_key(*where),
        "UpdateExpression": "SET #r = :r, #s = :s, #c = :c",
        "ConditionExpression": "attribute_exists(pk) AND attribute_not_exists(#r)",
        "ExpressionAttributeNames": dict(zip(("#r", "#s", "#c"), attrs(counter), strict=True)),
        "ExpressionAttributeValues": {
            ":r": {"N": str(remaining)},
            ":s": {"N": str(spent)},
            ":c": {"N": str(cap)},
        },
    }
