"""Capacity controls in front of a model call: a shared rate limit, a circuit breaker, a retry budget.

Rate limit (GCRA, "virtual scheduling"). DynamoDB cannot compute
``min(capacity, level + rate * elapsed)`` in an expression, so a bucket is stored as the
next free time instead: ``req_tat`` and ``tok_tat`` (theoretical arrival times, epoch seconds)
on the State item ``bucket#<model>`` / ``rate``. A call costing ``c`` units against a limit of
``L`` a minute moves a tat to ``max(tat, now) + c * 60 / L``; it is admitted while the new tat is
at most ``BURST_SECONDS`` (one minute) ahead of now, i.e. a full bucket holds one minute of
limit and refills continuously. Requests and tokens are two tats on one item, taken together.

The client computes the new tats and writes them with ONE conditional UpdateItem whose
condition is the old tats it assumed (or "idle": both tats in the past). A lost race returns
the current item (ALL_OLD) at no extra read, so the next attempt is exact; a quiet bucket, or
one only this process uses, costs one call per admission. Empty bucket: sleep the wait when
it fits before the deadline, else raise ``RateLimited`` (Deferred) so the event goes back to
the queue. Table unavailable: a conservative per-process limit, counted as ``RateLimiterFallback``.

Circuit breaker: ``breaker#<model>`` / ``state`` is closed (failures counted in a fixed window),
open (until ``opened_until``) or half_open (one probe holds a lease). Every transition is a
conditional write; if the table is unavailable the call is allowed (a breaker must not cause
an outage) and counted as ``CircuitBreakerUnavailable``.
"""

from __future__ import annotations

import math
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from lockgate.clock import Clock, SystemClock
from lockgate.errors import Deferred
from lockgate.telemetry import Log, Metrics

__all__ = ["Bucket", "CircuitBreaker", "CircuitOpen", "RateLimited", "RateLimiter", "RetryBudget"]

BURST_SECONDS = 60.0  # a full bucket holds one minute of the limit
DEADLINE_MARGIN_SECONDS = 30.0  # after a wait, the model call itself still needs time
MAX_WRITES = 4  # conditional writes per admission attempt before treating it as contention
TTL_SECONDS = 86_400
PROBE_WAIT_SECONDS = 5  # while another caller probes, look again soon


class RateLimited(Deferred):
    """The model's rate bucket is empty and the wait does not fit the deadline: retry later."""


class CircuitOpen(Deferred):
    """The model endpoint's breaker is open (or another caller holds the probe): no call sent."""


@dataclass(frozen=True)
class Bucket:
    """Per-minute limits for one model."""

    requests_per_minute: int
    tokens_per_minute: int


class _Unavailable(Exception):
    """The State table could not be written (internal: turned into a fallback)."""


class RateLimiter:
    """Requests- and tokens-per-minute limits per model, shared by every Lambda through the State table."""

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
        self._seen: dict[str, tuple[Decimal, Decimal]] = {}  # model -> last known (req_tat, tok_tat)

    def admit(self, model: str, tokens: int, deadline: float) -> None:
        """Take one request and ``tokens`` tokens from the model's bucket, waiting within ``deadline``.

        Models without a configured ``model#<id>`` bucket are not limited here.
        """
        bucket = self._limits.get(f"model#{model}")
        if bucket is None:
            return
        while True:
            now = self._clock.now()
            try:
                wait = self._take(model, bucket, max(0, tokens), now)
            except _Unavailable as exc:
                self._metrics.add_metric(name="RateLimiterFallback", unit="Count", value=1)
                self._log.warning("rate limiter table unavailable", extra={"model": model, "error": str(exc)})
                wait = self._fallback.take(model, now)
            if wait <= 0:
                return
            if now + wait > deadline - self._margin:
                self._metrics.add_metric(name="RateLimited", unit="Count", value=1)
                self._log.warning("rate limited", extra={"model": model, "wait": round(wait, 3)})
                raise RateLimited(f"rate limit for {model}: retry in {wait:.1f}s", max(1, math.ceil(wait)))
            self._sleep(wait)  # the bucket refills by then; try again once

    def _take(self, model: str, bucket: Bucket, tokens: int, now: float) -> float:
        """0 when admitted, else the seconds until the bucket has room (nothing taken)."""
        now_d = _dec(now)
        req_cost = _dec(60.0 / bucket.requests_per_minute)
        tok_cost = _dec(tokens * 60.0 / bucket.tokens_per_minute)
        # A call larger than a whole minute's tokens goes through an idle bucket and owes the rest.
        burst_req, burst_tok = _dec(BURST_SECONDS), max(_dec(BURST_SECONDS), tok_cost)
        old = self._seen.get(model)
        if old is not None and max(old) <= now_d:
            old = None  # the bucket is idle as far as we know: the cheap "idle" condition fits
        for _ in range(MAX_WRITES):
            req_tat = max(old[0], now_d) if old else now_d
            tok_tat = max(old[1], now_d) if old else now_d
            new_req, new_tok = req_tat + req_cost, tok_tat + tok_cost
            over = max(new_req - now_d - burst_req, new_tok - now_d - burst_tok)
            if over > 0:
                return float(over)
            current = self._write(model, old, new_req, new_tok, now_d)
            if current is None:
                self._seen[model] = (new_req, new_tok)
                return 0.0
            old = self._seen[model] = current
        # Lost every race: others are taking the bucket right now; wait one request's interval.
        return float(req_cost)

    def _write(
        self,
        model: str,
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
                Key={"pk": {"S": f"bucket#{model}"}, "sk": {"S": "rate"}},
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
            if _code(exc) != "ConditionalCheckFailedException":
                raise _Unavailable(_code(exc)) from exc
            item: dict[str, Any] = exc.response.get("Item") or {}  # type: ignore[assignment]
            req, tok = _num(item, "req_tat"), _num(item, "tok_tat")
            if req is None or tok is None:  # damaged: never repaired here; the fallback limits meanwhile
                raise _Unavailable("damaged bucket") from exc
            return req, tok
        except BotoCoreError as exc:
            raise _Unavailable(type(exc).__name__) from exc
        return None


class _LocalWindow:
    """A sliding-minute request count per model, for when the shared table is down."""

    def __init__(self, per_minute: int) -> None:
        self._per_minute = per_minute
        self._calls: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def take(self, model: str, now: float) -> float:
        with self._lock:
            calls = self._calls.setdefault(model, deque())
            while calls and calls[0] <= now - 60:
                calls.popleft()
            if len(calls) < self._per_minute:
                calls.append(now)
                return 0.0
            return calls[0] + 60 - now if calls else 60.0


class CircuitBreaker:
    """Closed / open / half-open per model endpoint, shared through the State table."""

    def __init__(
        self,
        dynamodb: Any,
        table: str,
        clock: Clock,
        *,
        failure_threshold: int = 5,
        window_seconds: int = 60,
        open_seconds: int = 30,
        metrics: Metrics,
        log: Log,
    ) -> None:
        self._db = dynamodb
        self._table = table
        self._clock = clock
        self._threshold = failure_threshold
        self._window = window_seconds
        self._open = open_seconds
        self._metrics = metrics
        self._log = log
        self._probes: dict[str, str] = {}  # model -> the probe token this process holds

    def before_call(self, model: str) -> None:
        """Return if a call may be sent; raise ``CircuitOpen`` (no call) while the breaker is open."""
        now = self._clock.now()
        try:
            got = self._db.get_item(TableName=self._table, Key=_breaker_key(model), ConsistentRead=True)
        except (ClientError, BotoCoreError) as exc:
            self._unavailable(model, exc)
            return
        item = got.get("Item") or {}
        state = item.get("state", {}).get("S", "closed")
        if state == "closed":
            return
        opened_until = float(_num(item, "opened_until") or 0)
        if state == "open" and now < opened_until:
            raise CircuitOpen(f"circuit open for {model}", max(1, math.ceil(opened_until - now)))
        token = uuid.uuid4().hex
        try:
            # Claim the probe: the open time is over, or an earlier probe's lease ran out.
            self._db.update_item(
                TableName=self._table,
                Key=_breaker_key(model),
                UpdateExpression="SET #s = :half, probe = :token, probe_until = :lease",
                ConditionExpression="(#s = :open AND opened_until <= :now) "
                "OR (#s = :half AND probe_until <= :now)",
                ExpressionAttributeNames={"#s": "state"},
                ExpressionAttributeValues={
                    ":half": {"S": "half_open"},
                    ":open": {"S": "open"},
                    ":token": {"S": token},
                    ":now": {"N": str(_dec(now))},
                    ":lease": {"N": str(_dec(now + self._open))},
                },
            )
        except ClientError as exc:
            if _code(exc) == "ConditionalCheckFailedException":
                raise CircuitOpen(
                    f"circuit half-open for {model}: a probe is in flight", PROBE_WAIT_SECONDS
                ) from exc
            self._unavailable(model, exc)
            return
        except BotoCoreError as exc:
            self._unavailable(model, exc)
            return
        self._probes[model] = token
        self._log.info("circuit half-open: probe admitted", extra={"model": model})

    def record_success(self, model: str) -> None:
        """A call succeeded: a successful probe closes the breaker; other successes write nothing."""
        token = self._probes.pop(model, None)
        if token is None:
            return
        now = _dec(self._clock.now())
        self._transition(
            model,
            "SET #s = :closed, failures = :zero, window_start = :now REMOVE probe, probe_until, opened_until",
            "#s = :half AND probe = :token",
            {
                ":closed": {"S": "closed"},
                ":half": {"S": "half_open"},
                ":zero": {"N": "0"},
                ":now": {"N": str(now)},
                ":token": {"S": token},
            },
        )
        self._log.info("circuit closed", extra={"model": model})

    def record_failure(self, model: str) -> None:
        """A call failed in a way that counts against the endpoint (overloaded, 5xx, timeout)."""
        now = self._clock.now()
        token = self._probes.pop(model, None)
        if token is not None:  # the probe failed: open again
            self._trip(model, now, "#s = :half AND probe = :token", {":token": {"S": token}})
            return
        cutoff = {":cutoff": {"N": str(_dec(now - self._window))}}
        failures: int
        window_start: Decimal | None
        for _ in range(3):
            try:
                out = self._db.update_item(
                    TableName=self._table,
                    Key=_breaker_key(model),
                    UpdateExpression="ADD failures :one",
                    ConditionExpression="#s = :closed AND window_start > :cutoff",
                    ExpressionAttributeNames={"#s": "state"},
                    ExpressionAttributeValues={":one": {"N": "1"}, ":closed": {"S": "closed"}, **cutoff},
                    ReturnValues="ALL_NEW",
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                )
            except ClientError as exc:
                if _code(exc) != "ConditionalCheckFailedException":
                    self._unavailable(model, exc)
                    return
                old: dict[str, Any] = exc.response.get("Item") or {}  # type: ignore[assignment]
                if old.get("state", {}).get("S", "closed") != "closed":
                    return  # already open or probing: late failures of earlier calls change nothing
                # No item, or the window ran out: start a new window with this failure.
                if self._transition(
                    model,
                    "SET #s = :closed, failures = :one, window_start = :now",
                    "attribute_not_exists(pk) OR (#s = :closed AND window_start <= :cutoff)",
                    {":closed": {"S": "closed"}, ":one": {"N": "1"}, ":now": {"N": str(_dec(now))}, **cutoff},
                ):
                    failures, window_start = 1, _dec(now)
                    break
                continue  # another Lambda started the window first: count into it
            except BotoCoreError as exc:
                self._unavailable(model, exc)
                return
            attrs = out.get("Attributes", {})
            failures, window_start = int(_num(attrs, "failures") or 0), _num(attrs, "window_start")
            break
        else:
            return
        if failures >= self._threshold:
            self._trip(model, now, "#s = :closed AND window_start = :ws", {":ws": {"N": str(window_start)}})

    def _trip(self, model: str, now: float, condition: str, values: dict[str, Any]) -> None:
        if self._transition(
            model,
            "SET #s = :open, opened_until = :until, failures = :zero REMOVE probe, probe_until",
            condition,
            {
                **values,
                ":open": {"S": "open"},
                ":half": {"S": "half_open"},
                ":closed": {"S": "closed"},
                ":zero": {"N": "0"},
                ":until": {"N": str(_dec(now + self._open))},
            },
        ):
            self._metrics.add_metric(name="CircuitOpened", unit="Count", value=1)
            self._log.warning("circuit opened", extra={"model": model, "open_seconds": self._open})

    def _transition(self, model: str, update: str, condition: str, values: dict[str, Any]) -> bool:
        """One conditional write; False when the condition failed (someone else moved the state)."""
        names = {"#s": "state"}
        used = {k: v for k, v in values.items() if k in update or k in condition}
        try:
            self._db.update_item(
                TableName=self._table,
                Key=_breaker_key(model),
                UpdateExpression=update,
                ConditionExpression=condition,
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=used,
            )
        except ClientError as exc:
            if _code(exc) != "ConditionalCheckFailedException":
                self._unavailable(model, exc)
            return False
        except BotoCoreError as exc:
            self._unavailable(model, exc)
            return False
        return True

    def _unavailable(self, model: str, exc: Exception) -> None:
        why = _code(exc) if isinstance(exc, ClientError) else type(exc).__name__
        self._metrics.add_metric(name="CircuitBreakerUnavailable", unit="Count", value=1)
        self._log.error("circuit breaker table unavailable", extra={"model": model, "error": why})


class RetryBudget:
    """In-process: retries allowed only while they stay within ``ratio`` of first attempts (sliding minute).

    ``min_retries_per_minute`` lets a quiet process still retry a little.
    """

    def __init__(
        self, ratio: float = 0.2, *, min_retries_per_minute: int = 1, clock: Clock | None = None
    ) -> None:
        self._ratio = ratio
        self._floor = min_retries_per_minute
        self._clock = clock or SystemClock()
        self._attempts: deque[tuple[float, bool]] = deque()
        self._lock = threading.Lock()

    def allow_retry(self) -> bool:
        """True when one more retry keeps retries within the budget."""
        with self._lock:
            self._expire()
            firsts = sum(1 for _, first in self._attempts if first)
            retries = len(self._attempts) - firsts
            return retries + 1 <= self._floor + self._ratio * firsts

    def record_attempt(self, first: bool) -> None:
        """Count an attempt sent: ``first`` for a new call, False for a retry."""
        with self._lock:
            self._expire()
            self._attempts.append((self._clock.now(), first))

    def _expire(self) -> None:
        cutoff = self._clock.now() - 60
        while self._attempts and self._attempts[0][0] <= cutoff:
            self._attempts.popleft()


def _breaker_key(model: str) -> dict[str, Any]:
    return {"pk": {"S": f"breaker#{model}"}, "sk": {"S": "state"}}


def _dec(value: float) -> Decimal:
    return Decimal(f"{value:.3f}")


def _num(item: Mapping[str, Any], name: str) -> Decimal | None:
    value = item.get(name)
    if not isinstance(value, dict) or "N" not in value:
        return None
    return Decimal(value["N"])


def _code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))
