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

Sharded (``[capacity] shards``): each shard holds its share of every cap and a run holds on its
process's next shard (``lockgate.shards.Spreader``); a spent shard sends the gate to the next,
and the cap is reached when every shard is. The bound and the rules for a change are in ``spend_item``.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any, NoReturn

from lockgate.capacity.spend_item import GLOBAL, SHARDS, adjust_update, attrs, hold_update, number, usd
from lockgate.capacity.spend_open import TTL_SECONDS, DayOpener
from lockgate.clock import Clock
from lockgate.config import BudgetConfig
from lockgate.errors import Deferred
from lockgate.shards import share
from lockgate.telemetry import Log, Metrics

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

NEAR_CAP = Decimal("0.8")  # share of the cap spent that counts as "near"
MIDNIGHT_MARGIN_SECONDS = 60
UNAVAILABLE_DELAY_SECONDS = 60


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
    """The conditional update that holds an estimate on every counter of a call (one item).

    Counters in ``guarded`` must also keep the near-cap margin, so a refusal only for the margin
    is how a crossing of 80% is seen without ALL_NEW."""

    day: str
    counters: tuple[str, ...]
    estimate: Decimal  # what is held: one call's estimate times the calls held for
    guarded: frozenset[str]
    update: dict[str, Any]
    one_call: Decimal  # less than this left: the cap is reached (on this shard)
    shard: int = 0
    shards: int = 1


@dataclass(frozen=True)
class Reservation:
    """Dollars held on the day's counters for one model call (or a run's next few), until settled."""

    day: str
    task: str
    estimate_usd: Decimal
    counters: tuple[str, ...]
    shard: int = 0  # settled on the shard it was held on (any shard would keep the day's total)
    shards: int = 1


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
        shards: int = 1,
    ) -> None:
        self._clock = clock
        self._global_cap = usd(global_cap_usd)
        self._task_caps = {name: usd(cap) for name, cap in task_caps.items()}
        self._metrics = metrics
        self._log = log
        self.shards = max(1, shards)  # for the days this process opens
        self._anchors: dict[str, tuple[int, dict[str, Decimal]]] = {}  # day -> its shards, spent before
        self._opener = DayOpener(dynamodb, table, self._all_caps, self._unavailable, self._damaged)
        self._table = table

    def shards_of(self, day: str) -> int:
        """How many shards ``day`` is spread over (as far as this process knows)."""
        return self._anchors[day][0] if day in self._anchors else self.shards

    def _anchor(self, day: str, now: float) -> tuple[int, dict[str, Decimal]]:
        """The day's shards and the spend before them (read once a day per process when sharded)."""
        if day not in self._anchors:
            if self.shards == 1:
                return 1, {}
            self._anchors[day] = self._opener.anchor(day, self.shards, now)
        return self._anchors[day]

    def holds(
        self,
        task: str,
        estimate_usd: float,
        now: float,
        unguarded: frozenset[str],
        calls: int = 1,
        shard: int = 0,
    ) -> list[Hold]:
        """The update that holds ``calls`` times ``estimate_usd`` on the global and the task's counter
        (on ``shard`` of the day's shards). Counters in ``unguarded`` (already seen near their cap)
        are held without the margin.
        """
        one_call = usd(estimate_usd)
        if one_call < 0:
            raise ValueError("a spend estimate cannot be negative")
        estimate = one_call * calls
        day = time.strftime("%Y-%m-%d", time.gmtime(now))
        shards, before = self._anchor(day, now)
        shard %= shards
        counters = self._counters(task)
        guarded = frozenset(counter for counter in counters if counter not in unguarded)
        marks = {c: self._cap_of(c, shard, shards) * (1 - NEAR_CAP) for c in guarded}
        opening = {
            c: (
                share(self._cap_of(c) - before.get(c, Decimal(0)), shard, shards),
                self._cap_of(c, shard, shards),
            )
            for c in counters
        }
        where, ttl = (day, shard, shards), int(now) + TTL_SECONDS
        update = hold_update(
            self._table, where, counters, estimate, marks, opening if shards > 1 else None, ttl
        )
        return [Hold(day, counters, estimate, guarded, update, one_call, shard, shards)]

    def hold_refused(self, hold: Hold, old: Mapping[str, Any] | None, now: float) -> frozenset[str]:
        """Read a refused hold (ALL_OLD): open the day, its shard or a task's counter, count crossing
        80%; raise when spent (AheadTooLarge when one call would fit). Returns the counters now near
        their cap. A shard that is spent raises SpendCapReached for that shard: the gate tries the next.
        """
        where, before = (hold.day, hold.shard, hold.shards), self._anchor(hold.day, now)[1]
        if old is None:
            self._opener.open_day(where, now, before)
            return frozenset()
        if hold.shards == 1 and SHARDS in old:  # the day is sharded: plan again with its count
            self._anchors[hold.day] = self._opener.anchor(hold.day, 1, now)
            return frozenset()
        left = {}
        for counter in hold.counters:
            name = attrs(counter)[0]
            if name not in old and counter != GLOBAL:
                self._opener.open_task(where, counter, before)
                continue
            remaining = number(old, name)
            if remaining is None:
                self._damaged(hold.day, counter, f"unreadable counter {old.get(name)!r}")
            if remaining < hold.one_call:
                raise self._cap_reached(hold.day, counter, remaining, hold.one_call, now)
            left[counter] = remaining
        if any(remaining < hold.estimate for remaining in left.values()):
            raise AheadTooLarge(hold.day)
        near = set()
        for counter, remaining in left.items():
            mark = self._cap_of(counter, hold.shard, hold.shards) * (1 - NEAR_CAP)
            if counter in hold.guarded and remaining - hold.estimate <= mark:
                self._near_cap(hold.day, counter, remaining, remaining - hold.estimate, mark)
                near.add(counter)
        return frozenset(near)

    def part_of(self, task: str, hold: Hold, share_usd: Decimal) -> Reservation:
        """One model's share of a joint hold (the shares add up exactly to what was held)."""
        return Reservation(hold.day, task, share_usd, self._counters(task), hold.shard, hold.shards)

    def reservation(self, task: str, holds: list[Hold]) -> Reservation:
        """The reservation that the (now written) holds make."""
        first = holds[0]
        return Reservation(first.day, task, first.estimate, first.counters, first.shard, first.shards)

    def unavailable(self, day: str, why: str) -> SpendUnavailable:
        """The error (and metric) for counters that could not be written: no call is made."""
        return self._unavailable(day, GLOBAL, why)

    def settle_updates(self, reservation: Reservation, actual_usd: float) -> list[dict[str, Any]]:
        """The update that replaces the held estimate by the actual cost (none when they match)."""
        refund = reservation.estimate_usd - usd(actual_usd)
        where = (reservation.day, reservation.shard, reservation.shards)
        return [adjust_update(self._table, where, reservation.counters, refund)] if refund else []

    def settle_failed(self, reservation: Reservation, exc: Exception) -> None:
        """Say loudly that a settle was lost; the counter keeps the estimate (an over-count)."""
        self._metrics.add_metric(name="SpendSettleFailed", unit="Count", value=1)
        self._log.error(
            "spend settle failed",
            extra={"day": reservation.day, "counters": list(reservation.counters), "error": repr(exc)[:200]},
        )

    # -- counters -------------------------------------------------------------------------

    def _counters(self, task: str) -> tuple[str, ...]:
        return (GLOBAL, f"task#{task}") if task in self._task_caps else (GLOBAL,)

    def _all_caps(self) -> dict[str, Decimal]:
        return {GLOBAL: self._global_cap, **{f"task#{t}": cap for t, cap in self._task_caps.items()}}

    def _cap_of(self, counter: str, shard: int = 0, shards: int = 1) -> Decimal:
        cap = self._global_cap if counter == GLOBAL else self._task_caps[counter.removeprefix("task#")]
        return share(cap, shard, shards)

    def _cap_reached(
        self, day: str, counter: str, remaining: Decimal, estimate: Decimal, now: float
    ) -> SpendCapReached:
        self._metrics.add_metric(name="SpendCapReached", unit="Count", value=1)
        self._log.warning(
            "spend cap reached",
            extra={"day": day, "counter": counter, "remaining": str(remaining), "estimate": str(estimate)},
        )
        why = f"daily spend cap reached ({counter}, {day})"
        return SpendCapReached(why, _seconds_to_next_day(now), scope=counter)

    def _near_cap(self, day: str, sk: str, before: Decimal, after: Decimal, threshold: Decimal) -> None:
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


def _seconds_to_next_day(now: float) -> int:
    return int(86_400 - (now % 86_400)) + MIDNIGHT_MARGIN_SECONDS


def daily_caps(
    budget: BudgetConfig,
    dynamodb: DynamoDBClient,
    table: str,
    clock: Clock,
    *,
    metrics: Metrics,
    log: Log,
    shards: int = 1,
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
        shards=shards,
    )
