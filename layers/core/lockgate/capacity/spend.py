"""Daily (UTC) dollar caps shared by every Lambda, enforced before a model call is sent.

Each counter is one State item, ``spend#YYYY-MM-DD`` / ``global`` or ``task#NAME``, holding the
REMAINING budget. DynamoDB conditions cannot do arithmetic (``spent + :est <= :cap`` is not
expressible), but ``remaining >= :est`` is: the conditional update
``SET remaining = remaining - :est`` (a ``Hold``) admits a call atomically across all Lambdas.
This module builds the holds (for one call, or a run's next few: ``capacity.allowance``) and
reads their refusals; ``lockgate.capacity.gate`` writes them with the rate-bucket takes, in one
call — the only way a model call is admitted.

Failing closed: a refusal returns the old item (ALL_OLD), so one call tells apart "spent" (a
number below the estimate), "no item yet" (a new day: created once with a conditional put,
remaining = cap) and "damaged" (not a number, or no ``remaining``). Nothing is ever reset.
Amounts are exact decimals. A day's cap is the one its first hold opened (a change applies from
the next UTC day). A reservation lost to a crash before it is settled stays charged (safe).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any, NoReturn

from botocore.exceptions import BotoCoreError, ClientError

from lockgate.clock import Clock
from lockgate.config import BudgetConfig
from lockgate.dynamo import error_code
from lockgate.errors import Deferred
from lockgate.telemetry import Log, Metrics

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

TTL_SECONDS = 40 * 86_400
NEAR_CAP = Decimal("0.8")  # share of the cap spent that counts as "near"
MIDNIGHT_MARGIN_SECONDS = 60
UNAVAILABLE_DELAY_SECONDS = 60
GLOBAL = "global"


class SpendCapReached(Deferred):
    """A daily dollar cap is spent: defer the work until the next UTC day."""

    def __init__(self, reason: str, delay_seconds: int, scope: str) -> None:
        super().__init__(reason, delay_seconds)
        self.scope = scope


class SpendUnavailable(Deferred):
    """The spend counter could not be read or is damaged: no call (fail closed); retry shortly."""


class AheadTooLarge(Exception):  # noqa: N818 - a signal to hold less, not a fault
    """A hold for several calls does not fit the budget left, but one call's would."""


@dataclass(frozen=True)
class Hold:
    """The conditional update that holds an estimate on one counter (alone or in a transaction).

    ``guarded``: it also demands the near-cap margin, so a refusal only for the margin is how a
    crossing of 80% is seen without ALL_NEW."""

    day: str
    counter: str
    estimate: Decimal  # what is held: one call's estimate times the calls held for
    guarded: bool
    update: dict[str, Any]
    one_call: Decimal  # less than this left: the cap is reached


@dataclass(frozen=True)
class Reservation:
    """Dollars held on the day's counters for one model call (or a run's next few), until settled."""

    day: str
    task: str
    estimate_usd: Decimal
    counters: tuple[str, ...]


def input_tokens_upper_bound(*parts: Any) -> int:
    """A cautious prompt size: half a token per UTF-8 byte of the JSON (text runs ~3-4 chars a token)."""
    return math.ceil(len(json.dumps(parts, ensure_ascii=False).encode("utf-8")) / 2)


class SpendCaps:
    """Global and per-task caps per UTC day: the holds before a model call and the settle after it."""

    def __init__(
        self,
        dynamodb: DynamoDBClient,
        table: str,
        clock: Clock,
        *,
        global_cap_usd: float,
        task_caps: Mapping[str, float],
        metrics: Metrics,
        log: Log,
    ) -> None:
        self._db = dynamodb
        self._table = table
        self._clock = clock
        self._global_cap = _usd(global_cap_usd)
        self._task_caps = {name: _usd(cap) for name, cap in task_caps.items()}
        self._metrics = metrics
        self._log = log

    def holds(
        self, task: str, estimate_usd: float, now: float, unguarded: frozenset[str], calls: int = 1
    ) -> list[Hold]:
        """The updates that hold ``calls`` times ``estimate_usd`` on the global and the task's counter.

        Counters named in ``unguarded`` (already seen near their cap) are held without the margin.
        """
        one_call = _usd(estimate_usd)
        if one_call < 0:
            raise ValueError("a spend estimate cannot be negative")
        estimate = one_call * calls
        day = time.strftime("%Y-%m-%d", time.gmtime(now))
        found = []
        for sk, cap in self._counters(task):
            guarded = sk not in unguarded
            update = self._hold_update(day, sk, estimate, cap, guarded)
            found.append(Hold(day, sk, estimate, guarded, update, one_call))
        return found

    def hold_refused(self, hold: Hold, old: Mapping[str, Any] | None, now: float) -> None:
        """Read a refused hold (ALL_OLD): open a new day's counter, or count crossing 80%; raise when
        spent (AheadTooLarge when one call would fit). Returns when the hold may be tried again."""
        if old is None:
            self._open_day(hold.day, hold.counter, self._cap_of(hold.counter), now)
            return
        remaining = _remaining(old)
        if remaining is None:
            self._damaged(hold.day, hold.counter, f"unreadable counter {old.get('remaining')!r}")
        if remaining < hold.one_call:
            raise self._cap_reached(hold.day, hold.counter, remaining, hold.one_call, now)
        if remaining < hold.estimate:
            raise AheadTooLarge(hold.counter)
        if hold.guarded and remaining > self._cap_of(hold.counter) * (1 - NEAR_CAP):
            self._near_cap(hold.day, hold.counter, remaining, remaining - hold.estimate)

    def reservation(self, task: str, holds: list[Hold]) -> Reservation:
        """The reservation that the (now written) holds make."""
        return Reservation(holds[0].day, task, holds[0].estimate, tuple(h.counter for h in holds))

    def unavailable(self, day: str, why: str) -> SpendUnavailable:
        """The error (and metric) for counters that could not be written: no call is made."""
        return self._unavailable(day, GLOBAL, why)

    def settle_updates(self, reservation: Reservation, actual_usd: float) -> list[dict[str, Any]]:
        """The updates that replace the held estimate by the actual cost (none when they match)."""
        refund = reservation.estimate_usd - _usd(actual_usd)
        return [self._adjust_update(reservation.day, sk, refund) for sk in reservation.counters if refund]

    def settle_failed(self, reservation: Reservation, exc: Exception) -> None:
        """Say loudly that a settle was lost; the counter keeps the estimate (an over-count)."""
        self._metrics.add_metric(name="SpendSettleFailed", unit="Count", value=1)
        self._log.error(
            "spend settle failed",
            extra={"day": reservation.day, "counters": list(reservation.counters), "error": repr(exc)[:200]},
        )

    # -- counters -------------------------------------------------------------------------

    def _counters(self, task: str) -> list[tuple[str, Decimal]]:
        counters = [(GLOBAL, self._global_cap)]
        if task in self._task_caps:
            counters.append((f"task#{task}", self._task_caps[task]))
        return counters

    def _cap_of(self, sk: str) -> Decimal:
        return self._global_cap if sk == GLOBAL else self._task_caps[sk.removeprefix("task#")]

    def _cap_reached(
        self, day: str, sk: str, remaining: Decimal, estimate: Decimal, now: float
    ) -> SpendCapReached:
        self._metrics.add_metric(name="SpendCapReached", unit="Count", value=1)
        self._log.warning(
            "spend cap reached",
            extra={"day": day, "counter": sk, "remaining": str(remaining), "estimate": str(estimate)},
        )
        return SpendCapReached(f"daily spend cap reached ({sk}, {day})", _seconds_to_next_day(now), scope=sk)

    def _hold_update(
        self, day: str, sk: str, estimate: Decimal, cap: Decimal, guarded: bool
    ) -> dict[str, Any]:
        # Guarded: the counter must stay strictly above the near-cap mark, so a hold that lands
        # exactly on 80% spent is refused and counted as the crossing (then held unguarded).
        least = "remaining > :least" if guarded else "remaining >= :least"
        at_least = estimate + cap * (1 - NEAR_CAP) if guarded else estimate
        return {
            "TableName": self._table,
            "Key": _key(day, sk),
            "UpdateExpression": "SET remaining = remaining - :est ADD spent :est",
            # The type test first: a string counter must fail the condition, not compare.
            "ConditionExpression": f"attribute_type(remaining, :n) AND {least}",
            "ExpressionAttributeValues": {
                ":est": {"N": str(estimate)},
                ":least": {"N": str(at_least)},
                ":n": {"S": "N"},
            },
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }

    def _adjust_update(self, day: str, sk: str, refund: Decimal) -> dict[str, Any]:
        return {
            "TableName": self._table,
            "Key": _key(day, sk),
            "UpdateExpression": "SET remaining = remaining + :refund ADD spent :charge",
            "ConditionExpression": "attribute_type(remaining, :n)",
            "ExpressionAttributeValues": {
                ":refund": {"N": str(refund)},
                ":charge": {"N": str(-refund)},
                ":n": {"S": "N"},
            },
        }

    def _open_day(self, day: str, sk: str, cap: Decimal, now: float) -> None:
        try:
            self._db.put_item(
                TableName=self._table,
                Item={
                    **_key(day, sk),
                    "remaining": {"N": str(cap)},
                    "spent": {"N": "0"},
                    "cap": {"N": str(cap)},
                    "opened_at": {"N": str(int(now))},
                    "ttl": {"N": str(int(now) + TTL_SECONDS)},
                },
                ConditionExpression="attribute_not_exists(pk)",
            )
        except ClientError as exc:
            if error_code(exc) != "ConditionalCheckFailedException":
                raise self._unavailable(day, sk, error_code(exc)) from exc
            # Another Lambda opened the day first: its item stands, never overwritten.
        except BotoCoreError as exc:
            raise self._unavailable(day, sk, type(exc).__name__) from exc

    def _near_cap(self, day: str, sk: str, before: Decimal, after: Decimal) -> None:
        threshold = self._cap_of(sk) * (1 - NEAR_CAP)
        if before > threshold >= after:
            self._metrics.add_metric(name="SpendNearCap", unit="Count", value=1)
            self._log.warning("spend near cap", extra={"day": day, "counter": sk, "remaining": str(after)})

    def _damaged(self, day: str, sk: str, why: str) -> NoReturn:
        self._metrics.add_metric(name="SpendCounterDamaged", unit="Count", value=1)
        self._log.error("spend counter damaged", extra={"day": day, "counter": sk, "why": why})
        raise SpendUnavailable(f"spend counter {sk} for {day} is damaged: {why}", UNAVAILABLE_DELAY_SECONDS)

    def _unavailable(self, day: str, sk: str, why: str) -> SpendUnavailable:
        self._metrics.add_metric(name="SpendUnavailable", unit="Count", value=1)
        self._log.error("spend counter unavailable", extra={"day": day, "counter": sk, "error": why})
        return SpendUnavailable(f"spend counter unavailable: {why}", UNAVAILABLE_DELAY_SECONDS)


def _key(day: str, sk: str) -> dict[str, Any]:
    return {"pk": {"S": f"spend#{day}"}, "sk": {"S": sk}}


def _usd(value: float) -> Decimal:
    return Decimal(f"{value:.6f}")


def _remaining(item: Mapping[str, Any]) -> Decimal | None:
    value = item.get("remaining")
    if not isinstance(value, dict) or "N" not in value:
        return None
    try:
        return Decimal(value["N"])
    except InvalidOperation:
        return None


def _seconds_to_next_day(now: float) -> int:
    return int(86_400 - (now % 86_400)) + MIDNIGHT_MARGIN_SECONDS


def daily_caps(
    budget: BudgetConfig, dynamodb: DynamoDBClient, table: str, clock: Clock, *, metrics: Metrics, log: Log
) -> SpendCaps | None:
    """The daily dollar caps of ``[budget]``, held in ``table``; None when no daily cap is set."""
    if budget.daily_usd is None:
        return None
    return SpendCaps(
        dynamodb,
        table,
        clock,
        global_cap_usd=budget.daily_usd,
        task_caps=budget.tasks,
        metrics=metrics,
        log=log,
    )
