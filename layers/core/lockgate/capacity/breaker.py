"""A circuit breaker per model endpoint, shared by every Lambda through the State table.

``breaker#<model>`` / ``state`` is closed (failures counted in a fixed window), open (until
``opened_until``) or half_open (one probe holds a lease). Every transition is a conditional
write; if the table is unavailable the call is allowed (a breaker must not cause an outage)
and counted as ``CircuitBreakerUnavailable``. Opening is counted as ``CircuitOpened``.

``closed_cache_seconds``: a "closed" read is trusted for that long in this process, so a busy
worker does not read the breaker before every call. The bound: a circuit another Lambda opens is
seen here at most that many seconds late; this process's own failures drop the cached read at
once, and open or half-open states are never cached (every call while open reads the item).
"""

from __future__ import annotations

import math
import uuid
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from lockgate.clock import Clock
from lockgate.dynamo import dec, error_code, num
from lockgate.errors import Deferred
from lockgate.telemetry import Log, Metrics

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

__all__ = ["CircuitBreaker", "CircuitOpen"]

PROBE_WAIT_SECONDS = 5  # while another caller probes, look again soon


class CircuitOpen(Deferred):
    """The model endpoint's breaker is open (or another caller holds the probe): no call sent."""


class CircuitBreaker:
    """Closed / open / half-open per model endpoint, shared through the State table."""

    def __init__(
        self,
        dynamodb: DynamoDBClient,
        table: str,
        clock: Clock,
        *,
        failure_threshold: int = 5,
        window_seconds: int = 60,
        open_seconds: int = 30,
        closed_cache_seconds: float = 0.0,
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
        self._cache_for = closed_cache_seconds
        self._closed_until: dict[str, float] = {}  # model -> until when a closed read is trusted

    def before_call(self, model: str) -> None:
        """Return if a call may be sent; raise ``CircuitOpen`` (no call) while the breaker is open."""
        now = self._clock.now()
        if now < self._closed_until.get(model, 0.0):
            return
        try:
            got = self._db.get_item(TableName=self._table, Key=_breaker_key(model), ConsistentRead=True)
        except (ClientError, BotoCoreError) as exc:
            self._unavailable(model, exc)
            return
        item = got.get("Item") or {}
        state = item.get("state", {}).get("S", "closed")
        if state == "closed":
            self._closed_until[model] = now + self._cache_for
            return
        self._closed_until.pop(model, None)
        opened_until = float(num(item, "opened_until") or 0)
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
                    ":now": {"N": str(dec(now))},
                    ":lease": {"N": str(dec(now + self._open))},
                },
            )
        except ClientError as exc:
            if error_code(exc) == "ConditionalCheckFailedException":
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
        now = dec(self._clock.now())
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
        self._closed_until.pop(model, None)  # this failure may open it: read again before the next call
        token = self._probes.pop(model, None)
        if token is not None:  # the probe failed: open again
            self._trip(model, now, "#s = :half AND probe = :token", {":token": {"S": token}})
            return
        cutoff = {":cutoff": {"N": str(dec(now - self._window))}}
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
                if error_code(exc) != "ConditionalCheckFailedException":
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
                    {":closed": {"S": "closed"}, ":one": {"N": "1"}, ":now": {"N": str(dec(now))}, **cutoff},
                ):
                    failures, window_start = 1, dec(now)
                    break
                continue  # another Lambda started the window first: count into it
            except BotoCoreError as exc:
                self._unavailable(model, exc)
                return
            attrs = out.get("Attributes", {})
            failures, window_start = int(num(attrs, "failures") or 0), num(attrs, "window_start")
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
                ":until": {"N": str(dec(now + self._open))},
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
            if error_code(exc) != "ConditionalCheckFailedException":
                self._unavailable(model, exc)
            return False
        except BotoCoreError as exc:
            self._unavailable(model, exc)
            return False
        return True

    def _unavailable(self, model: str, exc: Exception) -> None:
        why = error_code(exc) if isinstance(exc, ClientError) else type(exc).__name__
        self._metrics.add_metric(name="CircuitBreakerUnavailable", unit="Count", value=1)
        self._log.error("circuit breaker table unavailable", extra={"model": model, "error": why})


def _breaker_key(model: str) -> dict[str, Any]:
    return {"pk": {"S": f"breaker#{model}"}, "sk": {"S": "state"}}
