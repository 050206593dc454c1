"""A shared requests- and tokens-per-minute limit per scope (a model, a source), in the State table.

GCRA, "virtual scheduling". DynamoDB cannot compute ``min(capacity, level + rate * elapsed)`` in
an expression, so a bucket is stored as the next free time instead: ``req_tat`` and ``tok_tat``
(theoretical arrival times, epoch seconds) on the State item ``bucket#<scope>`` / ``rate``, where
a scope is ``model#<id>`` or ``source#<name>``. A call costing ``c`` units against a limit of
``L`` a minute moves a tat to ``max(tat, now) + c * 60 / L``; it is admitted while the new tat is
at most ``BURST_SECONDS`` (one minute) ahead of now, i.e. a full bucket holds one minute of
limit and refills continuously. Requests and tokens are two tats on one item, taken together.

The client computes the new tats (``plan``) and ``lockgate.capacity.gate`` writes them with ONE
conditional update whose condition is the old tats it assumed (or "idle": both tats in the
past), alone or as one item of the model call's single transaction. A lost race returns
the current item (ALL_OLD) at no extra read, so the next attempt is exact; a quiet bucket, or
one only this process uses, costs one call per admission. Empty bucket: sleep the wait when
it fits before the deadline, else raise ``RateLimited`` (Deferred) so the event goes back to
the queue with that delay. Table unavailable or bucket damaged: a conservative per-process
limit, counted as ``RateLimiterFallback``.

Sharded (``[capacity] shards``, ``lockgate.shards``): a bucket is up to ``shards`` items
``bucket#<scope>#s<i>``, each with an equal part of the limit and at least
``MIN_REQUESTS_PER_SHARD`` a minute (room for four runs' next five calls): a bucket under 40
requests a minute stays one item (it admits at most its limit, far below a key's 1,000 writes a
second). A run takes from the shard its position picks, or the next with room as far as this
process knows. The bound, stated: the shards together admit at most the limit a minute (plus a
minute's burst), as one bucket does; a take of several calls must fit on one shard, else one
call is taken. Changing ``shards`` starts new items: for a minute old and new may each burst.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from lockgate.clock import Clock
from lockgate.dynamo import dec, num
from lockgate.errors import Deferred
from lockgate.shards import in_turn, sharded
from lockgate.telemetry import Log, Metrics

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from lockgate.config import CapacityConfig

__all__ = ["Bucket", "BucketUnavailable", "RateLimited", "RateLimiter", "Take"]

BURST_SECONDS = 60.0  # a full bucket holds one minute of the limit
MIN_REQUESTS_PER_SHARD = 20  # a shard's part of a bucket: a run's next 5 calls take at most a quarter
DEADLINE_MARGIN_SECONDS = 30.0  # after a wait, the model call itself still needs time
TTL_SECONDS = 86_400


class RateLimited(Deferred):
    """The scope's rate bucket is empty and the wait does not fit the deadline: retry later."""


@dataclass(frozen=True)
class Bucket:
    """Per-minute limits for one scope; ``tokens_per_minute`` None limits requests only."""

    requests_per_minute: int
    tokens_per_minute: int | None = None


class BucketUnavailable(Exception):  # noqa: N818 - a signal to fall back, not a fault
    """The State table could not be written, or the bucket is damaged: use the per-process limit."""


@dataclass(frozen=True)
class Take:
    """One bucket's planned take: the conditional update to send (alone or in a transaction)."""

    scope: str
    shard: int
    new: tuple[Decimal, Decimal]  # (req_tat, tok_tat) once written
    interval: float  # one request's share of the minute: the wait after losing every race
    update: dict[str, Any]


class RateLimiter:
    """Requests- and tokens-per-minute limits per scope, shared by every Lambda through the State table."""

    def __init__(
        self,
        dynamodb: DynamoDBClient,
        table: str,
        clock: Clock,
        *,
        limits: Mapping[str, Bucket],
        metrics: Metrics,
        log: Log,
        fallback_per_minute: int = 5,
        sleep: Callable[[float], None] = time.sleep,
        deadline_margin_seconds: float = DEADLINE_MARGIN_SECONDS,
        shards: int = 1,
    ) -> None:
        self._db = dynamodb
        self._table = table
        self._clock = clock
        self._limits = dict(limits)
        self._metrics = metrics
        self._log = log
        self._sleep = sleep
        self._margin = deadline_margin_seconds
        self._fallback = _LocalWindow(fallback_per_minute)
        self.shards = max(1, shards)
        self._seen: dict[tuple[str, int], tuple[Decimal, Decimal]] = {}  # (scope, shard) -> its tats

    @classmethod
    def configured(  # noqa: PLR0913 - the config, and where the buckets live
        cls,
        capacity: CapacityConfig,
        dynamodb: DynamoDBClient,
        table: str,
        clock: Clock,
        metrics: Metrics,
        log: Log,
    ) -> RateLimiter | None:
        """The shared buckets ``[capacity]`` sets (``model#<id>``, ``source#<name>``); None without any."""
        limits = {
            f"{kind}#{name}": Bucket(limit.requests_per_minute, limit.tokens_per_minute)
            for kind, scopes in (("model", capacity.models), ("source", capacity.sources))
            for name, limit in scopes.items()
        }
        if not limits:
            return None
        fallback, shards = capacity.fallback_requests_per_minute, capacity.shards
        return cls(
            dynamodb,
            table,
            clock,
            limits=limits,
            metrics=metrics,
            log=log,
            fallback_per_minute=fallback,
            shards=shards,
        )

    def plan(
        self, scope: str, tokens: int, now: float, requests: int = 1, position: int = 0
    ) -> Take | float | None:
        """The conditional write that takes ``requests`` and ``tokens`` from the scope's bucket (its
        shard ``position`` picks), or the seconds to wait first. None when the scope has no bucket.
        Nothing is written here.
        """
        bucket = self._limits.get(scope)
        if bucket is None:
            return None
        waits, n = [], self.shards_of(bucket)
        for shard in in_turn(position % n, n):  # a shard without room: the next
            plan = self._plan_on(scope, bucket, (shard, n), max(0, tokens), dec(now), requests)
            if isinstance(plan, Take):
                return plan
            waits.append(plan)
        return min(waits)

    def shards_of(self, bucket: Bucket) -> int:
        """How many items the bucket is spread over: each keeps ``MIN_REQUESTS_PER_SHARD`` a minute."""
        return max(1, min(self.shards, bucket.requests_per_minute // MIN_REQUESTS_PER_SHARD))

    def _plan_on(
        self, scope: str, bucket: Bucket, where: tuple[int, int], tokens: int, now_d: Decimal, requests: int
    ) -> Take | float:
        """The take on one shard (``1 / n`` of the limit), or the seconds it needs first."""
        shard, n = where
        req_cost = dec(60.0 * requests * n / bucket.requests_per_minute)
        tok_cost = dec(tokens * 60.0 * n / bucket.tokens_per_minute) if bucket.tokens_per_minute else dec(0)
        # A call larger than a whole minute's tokens goes through an idle bucket and owes the rest.
        burst_req, burst_tok = dec(BURST_SECONDS), max(dec(BURST_SECONDS), tok_cost)
        old = self._seen.get((scope, shard))
        if old is not None and max(old) <= now_d:
            old = None  # the bucket is idle as far as we know: the cheap "idle" condition fits
        req_tat = max(old[0], now_d) if old else now_d
        tok_tat = max(old[1], now_d) if old else now_d
        new = (req_tat + req_cost, tok_tat + tok_cost)
        over = max(new[0] - now_d - burst_req, new[1] - now_d - burst_tok)
        if over > 0:
            return float(over)
        update = self._update(sharded(f"bucket#{scope}", shard, n), old, new, now_d)
        return Take(scope, shard, new, float(req_cost) / requests, update)

    def taken(self, take: Take) -> None:
        """The take's write succeeded: remember the bucket as written."""
        self._seen[(take.scope, take.shard)] = take.new

    def refused(self, take: Take, item: Mapping[str, Any] | None) -> None:
        """The take's condition failed: learn the stored tats (ALL_OLD); a damaged bucket is unavailable."""
        req, tok = num(item or {}, "req_tat"), num(item or {}, "tok_tat")
        if req is None or tok is None:  # damaged: never repaired here; the fallback limits meanwhile
            raise BucketUnavailable("damaged bucket")
        self._seen[(take.scope, take.shard)] = (req, tok)

    def fallback(self, scope: str, now: float, why: str) -> float:
        """The shared bucket cannot be used: the per-process limit decides, and it is counted."""
        self._metrics.add_metric(name="RateLimiterFallback", unit="Count", value=1)
        self._log.warning("rate limiter table unavailable", extra={"scope": scope, "error": why})
        return self._fallback.take(scope, now)

    def wait_or_defer(self, scope: str, wait: float, now: float, deadline: float) -> None:
        """Sleep ``wait`` if it fits before ``deadline`` (less the call's margin), else raise RateLimited."""
        if now + wait > deadline - self._margin:
            self._metrics.add_metric(name="RateLimited", unit="Count", value=1)
            self._log.warning("rate limited", extra={"scope": scope, "wait": round(wait, 3)})
            raise RateLimited(f"rate limit for {scope}: retry in {wait:.1f}s", max(1, math.ceil(wait)))
        self._sleep(wait)  # the bucket refills by then; never a busy loop

    def _update(
        self, pk: str, old: tuple[Decimal, Decimal] | None, new: tuple[Decimal, Decimal], now: Decimal
    ) -> dict[str, Any]:
        if old is None:
            condition = "attribute_not_exists(req_tat) OR (req_tat <= :now AND tok_tat <= :now)"
            values = {":now": {"N": str(now)}}
        else:
            condition = "req_tat = :old_req AND tok_tat = :old_tok"
            values = {":old_req": {"N": str(old[0])}, ":old_tok": {"N": str(old[1])}}
        return {
            "TableName": self._table,
            "Key": {"pk": {"S": pk}, "sk": {"S": "rate"}},
            "UpdateExpression": "SET req_tat = :req, tok_tat = :tok, #ttl = :ttl",
            "ConditionExpression": condition,
            "ExpressionAttributeNames": {"#ttl": "ttl"},
            "ExpressionAttributeValues": {
                **values,
                ":req": {"N": str(new[0])},
                ":tok": {"N": str(new[1])},
                ":ttl": {"N": str(int(now) + TTL_SECONDS)},
            },
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }


class _LocalWindow:
    """A sliding-minute request count per scope, for when the shared table is down."""

    def __init__(self, per_minute: int) -> None:
        self._per_minute = per_minute
        self._calls: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def take(self, scope: str, now: float) -> float:
        with self._lock:
            calls = self._calls.setdefault(scope, deque())
            while calls and calls[0] <= now - 60:
                calls.popleft()
            if len(calls) < self._per_minute:
                calls.append(now)
                return 0.0
            return calls[0] + 60 - now if calls else 60.0
