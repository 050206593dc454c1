"""Shared counters spread over shards, so no DynamoDB item key is one that every event writes.

One item key takes at most 1,000 write units a second, so a counter every event writes (the
day's spend, a rate bucket, the usage rollup, a task's pending proposals) caps the deployment.
Each is split over ``shards`` items with their own partition keys (``<pk>#s<i>``), each holding
its share of the limit (``limit / shards``); a run takes the next shard in its process's turn
(``Spreader``) and a proposal or a run's usage the shard its id hashes to, so the load spreads
evenly. One shard is the
layout before sharding: the key without a suffix, the whole limit on one item.
"""

from __future__ import annotations

import hashlib
import itertools
from decimal import ROUND_DOWN, Decimal

DEFAULT_SHARDS = 16  # [capacity] shards by default: the example's busiest key then takes 0.2 WCU an event
MICRO = Decimal("0.000001")


def shard_of(key: str, shards: int) -> int:
    """The shard of an id (a delivery, a run, a proposal): stable, evenly spread."""
    if shards <= 1:
        return 0
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:4], "big") % shards


def sharded(pk: str, shard: int, shards: int) -> str:
    """The partition key of one shard of a counter (the counter's own key with one shard)."""
    return pk if shards <= 1 else f"{pk}#s{shard}"


def every_shard(pk: str, shards: int) -> list[str]:
    """The partition keys of every shard of a counter (its own key with one shard)."""
    return [sharded(pk, shard, shards) for shard in range(max(1, shards))]


def share(total: Decimal, shard: int, shards: int) -> Decimal:
    """One shard's part of a dollar amount: to the millionth, the parts adding up to ``total``."""
    each = (total / shards).quantize(MICRO, rounding=ROUND_DOWN)
    return each + (total - each * shards if shard == 0 else Decimal(0))


def count_share(total: int, shard: int, shards: int) -> int:
    """One shard's part of a count (the first ``total % shards`` shards take one more)."""
    return total // shards + (1 if shard < total % shards else 0)


def in_turn(first: int, shards: int) -> list[int]:
    """Every shard, starting at ``first``: where to look when the first has no room."""
    return [(first + step) % shards for step in range(shards)]


class Spreader:
    """Picks each run's shard position: this process's turn, from an offset its first id hashes to.

    In turn, the runs of one process land on every shard equally (a hash of each id would leave
    some shards with twice the mean in a few dozen runs); the offset keeps processes apart.
    Every counter takes the position modulo its own shard count.
    """

    def __init__(self) -> None:
        self._next = itertools.count()
        self._offset: int | None = None

    def pick(self, key: str = "") -> int:
        """The next position (``key``, a delivery id, fixes the offset the first time)."""
        if self._offset is None:
            self._offset = shard_of(key, 2**31) if key else 0
        return self._offset + next(self._next)
