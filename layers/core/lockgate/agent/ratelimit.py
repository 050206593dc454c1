"""A shared requests- and tokens-per-minute limit per scope (a model, a source), in the State table.

GCRA, "virtual scheduling". DynamoDB cannot compute ``min(capacity, level + rate * elapsed)`` in
an expression, so a bucket is stored as the next free time instead: ``req_tat`` and ``tok_tat``
(theoretical arrival times, epoch seconds) on the State item ``bucket#<scope>`` / ``rate``, where
a scope is ``model#<id>`` or ``source#<name>``. A call costing ``c`` units against a limit of
``L`` a minute moves a tat to ``max(tat, now) + c * 60 / L``; it is admitted while the new tat is
at most ``BURST_SECONDS`` (one minute) ahead of now, i.e. a full bucket holds one minute of
limit and refills continuously. Requests and tokens are two tats on one item, taken together.

The client computes the new tats and writes them with ONE conditional UpdateItem whose
condition is the old tats it assumed (or "idle": both tats in the past). A lost race returns
the current item (ALL_OLD) at no extra read, so the next attempt is exact; a quiet bucket, or
one only this process uses, costs one call per admission. Empty bucket: sleep the wait when
it fits before the deadline, else raise ``RateLimited`` (Deferred) so the event goes back to
the queue with that delay. Table unavailable or bucket damaged: a conservative per-process
limit, counted as ``RateLimiterFallback``.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from lockgate.agent.stateitems import dec, error_code, num
from lockgate.clock import Clock
from lockgate.errors import Deferred
from lockgate.telemetry import Log, Metrics

__all__ = ["Bucket", "RateLimited", "RateLimiter"]

BURST_SECONDS = 60.0  # a full bucket holds one minute of the limit
DEADLINE_MARGIN_SECONDS = 30.0  # after a wait, the model call itself still needs time
MAX_WRITES = 4  # conditional writes per admission attempt before treating it as contention
TTL_SECONDS = 86_400


class RateLimited(Deferred):
    """The scope's rate bucket is empty and the wait does not fit the deadline: retry later."""


@dataclass(frozen=True)
class Bucket:
    """Per-minute limits for one scope; ``tokens_per_minute`` None limits requests only."""

    requests_per_minute: int
    tokens_per_minute: int | None = None


class _Unavailable(Exception):
    """The State table could not be written (internal: turned into a fallback)."""


class RateLimiter:
    """Requests- and tokens-per-minute limits per scope, shared by every Lambda through the State table."""

    def __init__(
        self,
        dynamodb: Any,
        table: str,
        clock: Clock,
        *,
        limits: Mapping[str, Bucket],
        metrics: Metrics,
        log: Log,
        fallback_per_minute: int = 5,
        sleep: Callable[[float], None] = time.sleep,
        deadline_margin_seconds: float = DEADLINE_MARGIN_SECONDS,
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
        self._seen: dict[str, tuple[Decimal, Decimal]] = {}  # scope -> last known (req_tat, tok_tat)

    def limits(self, scope: str) -> bool:
        """True when ``scope`` (``model#<id>`` or ``source#<name>``) has a configured bucket."""
        return scope in self._limits

    def admit(self, scope: str, tokens: int, deadline: float) -> None:
        """Take one request and ``tokens`` tokens from the scope's bucket, waiting within ``deadline``.

        Scopes without a configured bucket (e.g. ``model#<id>``, ``source#<name>``) are not limited.
        """
        bucket = self._limits.get(scope)
        if bucket is None:
            return
        while True:
            now = self._clock.now()
            try:
                wait = self._take(scope, bucket, max(0, tokens), now)
            except _Unavailable as exc:
                self._metrics.add_metric(name="RateLimiterFallback", unit="Count", value=1)
                self._log.warning("rate limiter table unavailable", extra={"scope": scope, "error": str(exc)})
                wait = self._fallback.take(scope, now)
            if wait <= 0:
                return
            if now + wait > deadline - self._margin:
                self._metrics.add_metric(name="RateLimited", unit="Count", value=1)
                self._log.warning("rate limited", extra={"scope": scope, "wait": round(wait, 3)})
                raise RateLimited(f"rate limit for {scope}: retry in {wait:.1f}s", max(1, math.ceil(wait)))
            self._sleep(wait)  # the bucket refills by then; try again once

    def _take(self, scope: str, bucket: Bucket, tokens: int, now: float) -> float:
        """0 when admitted, else the seconds until the bucket has room (nothing taken)."""
        now_d = dec(now)
        req_cost = dec(60.0 / bucket.requests_per_minute)
        tok_cost = dec(tokens * 60.0 / bucket.tokens_per_minute) if bucket.tokens_per_minute else dec(0)
        # A call larger than a whole minute's tokens goes through an idle bucket and owes the rest.
        burst_req, burst_tok = dec(BURST_SECONDS), max(dec(BURST_SECONDS), tok_cost)
        old = self._seen.get(scope)
        if old is not None and max(old) <= now_d:
            old = None  # the bucket is idle as far as we know: the cheap "idle" condition fits
        for _ in range(MAX_WRITES):
            req_tat = max(old[0], now_d) if old else now_d
            tok_tat = max(old[1], now_d) if old else now_d
            new_req, new_tok = req_tat + req_cost, tok_tat + tok_cost
            over = max(new_req - now_d - burst_req, new_tok - now_d - burst_tok)
            if over > 0:
                return float(over)
            current = self._write(scope, old, new_req, new_tok, now_d)
            if current is None:
                self._seen[scope] = (new_req, new_tok)
                return 0.0
            old = self._seen[scope] = current
        # Lost every race: others are taking the bucket right now; wait one request's interval.
        return float(req_cost)

    def _write(
        self,
        scope: str,
        old: tuple[Decimal, Decimal] | None,
        new_req: Decimal,
        new_tok: Decimal,
        now: Decimal,
    ) -> tuple[Decimal, Decimal] | None:
        """None when written; else the tats actually stored (ALL_OLD of the failed condition)."""
        if old is None:
            condition = "attribute_not_exists(req_tat) OR (req_tat <= :now AND tok_tat <= :now)"
            values = {":now": {"N": str(now)}}
        else:
            condition = "req_tat = :old_req AND tok_tat = :old_tok"
            values = {":old_req": {"N": str(old[0])}, ":old_tok": {"N": str(old[1])}}
        try:
            self._db.update_item(
                TableName=self._table,
                Key={"pk": {"S": f"bucket#{scope}"}, "sk": {"S": "rate"}},
                UpdateExpression="SET req_tat = :req, tok_tat = :tok, #ttl = :ttl",
                ConditionExpression=condition,
                ExpressionAttributeNames={"#ttl": "ttl"},
                ExpressionAttributeValues={
                    **values,
                    ":req": {"N": str(new_req)},
                    ":tok": {"N": str(new_tok)},
                    ":ttl": {"N": str(int(now) + TTL_SECONDS)},
                },
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if error_code(exc) != "ConditionalCheckFailedException":
                raise _Unavailable(error_code(exc)) from exc
            item: dict[str, Any] = exc.response.get("Item") or {}  # type: ignore[assignment]
            req, tok = num(item, "req_tat"), num(item, "tok_tat")
            if req is None or tok is None:  # damaged: never repaired here; the fallback limits meanwhile
                raise _Unavailable("damaged bucket") from exc
            return req, tok
        except BotoCoreError as exc:
            raise _Unavailable(type(exc).__name__) from exc
        return None


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
