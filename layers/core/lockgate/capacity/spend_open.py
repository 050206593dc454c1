"""Opening a day's spend counters: the day's item or one shard of it, and a task added since.

Unsharded, the first hold of a day finds no item and opens it, once, with a conditional put,
every counter at its cap. Sharded, each process reads the day's anchor once (its shard count,
and what an unsharded version spent that day), and a hold opens its shard in the same write
(``spend_item.hold_update``), each counter at its share of what is left of the cap; only a hold
larger than that opens with a put first. A task capped after its day (or shard) opened gets its
counter added the same way; unsharded, a day opened by the layout with one item per counter
carries that item over.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import TYPE_CHECKING, Any, NoReturn

from botocore.exceptions import BotoCoreError, ClientError

from lockgate.capacity.spend_item import (
    GLOBAL,
    SHARDS,
    anchor_update,
    attrs,
    day_item,
    key,
    number,
    task_opening,
)
from lockgate.dynamo import error_code
from lockgate.errors import Deferred
from lockgate.shards import share

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

TTL_SECONDS = 40 * 86_400
Where = tuple[str, int, int]  # (day, shard, shards)


class DayOpener:
    """Writes a day's (or a shard's) first counters; only the first writer of each wins."""

    def __init__(
        self,
        dynamodb: DynamoDBClient,
        table: str,
        caps: Callable[[], Mapping[str, Decimal]],
        unavailable: Callable[[str, str, str], Deferred],
        damaged: Callable[[str, str, str], NoReturn],
    ) -> None:
        self._db = dynamodb
        self._table = table
        self._caps = caps  # every configured counter's cap
        self._unavailable = unavailable
        self._damaged = damaged

    def anchor(self, day: str, shards: int, now: float) -> tuple[int, dict[str, Decimal]]:
        """The day's shard count and what an unsharded version spent that day, per counter.

        One consistent read; the day's first sharded process also records its shard count there
        (one conditional update), so every process spreads the day over the same shards.
        """
        item = self._read(day, key(day))
        if SHARDS not in item and shards > 1:
            item = self._update(day, anchor_update(day, shards, int(now), TTL_SECONDS))
        count = int(item[SHARDS]["N"]) if SHARDS in item else 1
        return count, {c: number(item, attrs(c)[1]) or Decimal(0) for c in self._caps()}

    def open_day(self, where: Where, now: float, before: Mapping[str, Decimal]) -> None:
        """Open the day's item (or shard): each counter at its cap (share), less ``before``."""
        day, shard, shards = where
        caps = {
            counter: (share(cap - before.get(counter, Decimal(0)), shard, shards), share(cap, shard, shards))
            for counter, cap in self._caps().items()
        }
        item = day_item((day, shard, shards), caps, int(now), TTL_SECONDS)
        self._write_once(day, {"Item": item, "ConditionExpression": "attribute_not_exists(pk)"})

    def open_task(self, where: Where, counter: str, before: Mapping[str, Decimal]) -> None:
        """A task's counter on a day (or shard) opened without it: at its cap (share) less ``before``
        (unsharded, a day opened by the one-item-per-counter layout carries that item over)."""
        day, shard, shards = where
        cap = self._caps()[counter]
        if shards > 1:
            left = share(cap - before.get(counter, Decimal(0)), shard, shards)
            request = task_opening(where, counter, left, Decimal(0), share(cap, shard, shards))
        else:
            fresh = {"remaining": {"N": str(cap)}, "spent": {"N": "0"}}
            earlier = self._read(day, key(day, counter)) or fresh
            remaining, spent = number(earlier, "remaining"), number(earlier, "spent")
            if remaining is None or spent is None:
                self._damaged(day, counter, "unreadable counter in the earlier layout")
            request = task_opening(where, counter, remaining, spent, cap)
        self._write_once(day, request)

    def _read(self, day: str, item_key: dict[str, Any]) -> dict[str, Any]:
        try:
            found = self._db.get_item(TableName=self._table, Key=item_key, ConsistentRead=True)
        except (ClientError, BotoCoreError) as exc:
            raise self._unavailable(day, GLOBAL, type(exc).__name__) from exc
        return dict(found.get("Item") or {})

    def _update(self, day: str, request: dict[str, Any]) -> dict[str, Any]:
        try:
            return dict(self._db.update_item(TableName=self._table, **request).get("Attributes") or {})
        except (ClientError, BotoCoreError) as exc:
            why = error_code(exc) if isinstance(exc, ClientError) else type(exc).__name__
            raise self._unavailable(day, GLOBAL, why) from exc

    def _write_once(self, day: str, request: dict[str, Any]) -> None:
        """A put or update that only the first Lambda wins; losing to another is not an error."""
        try:
            if "Item" in request:
                self._db.put_item(TableName=self._table, **request)
            else:
                self._db.update_item(TableName=self._table, **request)
        except ClientError as exc:
            if error_code(exc) != "ConditionalCheckFailedException":
                raise self._unavailable(day, GLOBAL, error_code(exc)) from exc
        except BotoCoreError as exc:
            raise self._unavailable(day, GLOBAL, type(exc).__name__) from exc
