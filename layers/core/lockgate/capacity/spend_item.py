"""The day's spend item: every daily counter (global, and each capped task) on one State item.

``spend#YYYY-MM-DD`` / ``global`` holds the global counter as ``remaining``, ``spent`` and ``cap``
(the names an item of the earlier layout had), and each task's as ``task#NAME|remaining`` and so
on. One item means a hold on both the global and the task's counter is ONE conditional update
(atomic without a transaction: one write unit, where a two-item transaction costs four) and a
settle is one more. Versions before kept one item per counter (``task#NAME`` items); a day they
opened is read on: the global counter is the same item, and a task's counter carries over its
remaining and spent the first time this version holds on it (``SpendCaps._open_task``).

These are the request builders; ``lockgate.capacity.spend`` reads the refusals and writes.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

GLOBAL = "global"


def key(day: str, sk: str = GLOBAL) -> dict[str, Any]:
    """The day's item (or, with ``sk``, an item of the earlier one-per-counter layout)."""
    return {"pk": {"S": f"spend#{day}"}, "sk": {"S": sk}}


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
    table: str, day: str, counters: tuple[str, ...], estimate: Decimal, marks: Mapping[str, Decimal]
) -> dict[str, Any]:
    """Take ``estimate`` off every counter if each keeps it (and its near-cap mark, where given).

    With a mark, the counter must stay strictly above it, so a hold that lands exactly on 80%
    spent is refused and counted as the crossing (then held without it). The type test comes
    first: a string counter must fail the condition, not compare.
    """
    names: dict[str, str] = {}
    values: dict[str, Any] = {":est": {"N": str(estimate)}, ":n": {"S": "N"}}
    sets, adds, conditions = [], [], []
    for i, counter in enumerate(counters):
        names[f"#r{i}"], names[f"#s{i}"], _ = attrs(counter)
        values[f":least{i}"] = {"N": str(estimate + marks.get(counter, Decimal(0)))}
        compare = ">" if counter in marks else ">="
        sets.append(f"#r{i} = #r{i} - :est")
        adds.append(f"#s{i} :est")
        conditions.append(f"attribute_type(#r{i}, :n) AND #r{i} {compare} :least{i}")
    return {
        "TableName": table,
        "Key": key(day),
        "UpdateExpression": f"SET {', '.join(sets)} ADD {', '.join(adds)}",
        "ConditionExpression": " AND ".join(conditions),
        "ExpressionAttributeNames": names,
        "ExpressionAttributeValues": values,
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
    }


def adjust_update(table: str, day: str, counters: tuple[str, ...], refund: Decimal) -> dict[str, Any]:
    """Give ``refund`` back to every counter (negative: charge more); never creates a counter."""
    names: dict[str, str] = {}
    for i, counter in enumerate(counters):
        names[f"#r{i}"], names[f"#s{i}"], _ = attrs(counter)
    each = range(len(counters))
    return {
        "TableName": table,
        "Key": key(day),
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


def day_item(day: str, caps: Mapping[str, Decimal], now: int, ttl_seconds: int) -> dict[str, Any]:
    """A new day's item with every counter at its cap."""
    item = {**key(day), "opened_at": {"N": str(now)}, "ttl": {"N": str(now + ttl_seconds)}}
    for counter, cap in caps.items():
        item.update(zip(attrs(counter), ({"N": str(cap)}, {"N": "0"}, {"N": str(cap)}), strict=True))
    return item


def task_opening(day: str, counter: str, remaining: Decimal, spent: Decimal, cap: Decimal) -> dict[str, Any]:
    """Add a task's counter to a day's item that lacks it (only if it still does)."""
    return {
        "Key": key(day),
        "UpdateExpression": "SET #r = :r, #s = :s, #c = :c",
        "ConditionExpression": "attribute_exists(pk) AND attribute_not_exists(#r)",
        "ExpressionAttributeNames": dict(zip(("#r", "#s", "#c"), attrs(counter), strict=True)),
        "ExpressionAttributeValues": {
            ":r": {"N": str(remaining)},
            ":s": {"N": str(spent)},
            ":c": {"N": str(cap)},
        },
    }
