"""The spend holds and rate-bucket takes for one model call, written in ONE DynamoDB call.

Taken one by one, budget and rate limit cost a write per counter (global, task) and per bucket
(source, model) before the call, and one per counter after it: up to six calls per model call.
Here every conditional update of the admission goes into a single ``TransactWriteItems`` (a lone
update is sent as a plain ``UpdateItem``), and the settle after the call is one more: two calls
per model call, whatever the number of counters and buckets (``benchmarks/admission_calls.py``).

Trade-offs, chosen on purpose:

- A transaction returns no new values, so "spend crossed 80%" cannot be read from ALL_NEW. Each
  hold also demands the near-cap margin (``remaining >= estimate + 20% of the cap``); a hold
  refused only for that margin is the crossing (counted once, when the old value was above it)
  and is retried without the margin: one extra call, only for calls in the last 20% of a budget.
- Transactional writes cost twice the write capacity of plain ones (on-demand: twice the price
  of those writes); calls, not capacity units, are what add latency to every model call.
- Every refusal comes back with the item as it was (``ALL_OLD`` per cancellation reason), so a
  lost race costs no read; the day's first call also opens its counters (one put each).
- Holds and takes succeed or fail together: no bucket is taken for a call the budget refuses.
- The State table failing: spend fails closed (no call); without spend caps, each bucket falls
  back to the per-process limit (``RateLimiterFallback``).
- Sharded counters (``lockgate.shards``): a run writes its process's next shard (of
  the spend and each bucket); a spent spend shard sends it to the next, the cap is reached when all are.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from lockgate.capacity.ratelimit import BucketUnavailable, RateLimited, RateLimiter, Take
from lockgate.capacity.spend import AheadTooLarge, Hold, Reservation, SpendCapReached, SpendCaps
from lockgate.capacity.spend_item import usd
from lockgate.clock import Clock
from lockgate.dynamo import error_code
from lockgate.shards import Spreader

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

MAX_TRIES = 6  # transactions per admission before treating the buckets as contended


class _Failed(Exception):
    """Internal: the write's conditions failed; one reason per item (None where it held)."""

    def __init__(self, reasons: list[dict[str, Any] | None]) -> None:
        super().__init__("conditions failed")
        self.reasons = reasons


@dataclass(frozen=True)
class Part:
    """One model's share of a joint admission: its buckets, one call's estimate, its calls and tokens."""

    scopes: tuple[str, ...]
    estimate_usd: float
    calls: int
    tokens: int  # taken from each of its buckets for all its calls


@dataclass(frozen=True)
class Ahead:
    """What one admission covers: the dollars held (None without caps) and how many calls."""

    reservation: Reservation | None
    calls: int


class Gate:
    """Admits one model call through the spend caps and the rate buckets with one write."""

    def __init__(
        self, dynamodb: DynamoDBClient, clock: Clock, *, spend: SpendCaps | None, limiter: RateLimiter | None
    ) -> None:
        self._db = dynamodb
        self._clock = clock
        self.spend = spend
        self.limiter = limiter
        # One admission or settle at a time in this process: a batch's records run in threads,
        # and from one process's view of a bucket, threads writing at once refuse each other's
        # optimistic conditions (a record deferred as "contended" with no limit reached). Taking
        # turns costs a write's time (milliseconds, against seconds of model call); between
        # Lambdas the conditions still decide. A turn includes a wait for a bucket to refill.
        self._turn = threading.RLock()
        self.spread = Spreader()  # each run's shard position; every counter takes it modulo its shards

    def admit(
        self, task: str, scopes: list[str], estimate_usd: float, tokens: int, deadline: float
    ) -> Reservation | None:
        """Hold the estimate and take every scope's bucket together; wait, or raise Deferred."""
        return self.admit_ahead(task, scopes, estimate_usd, tokens, deadline, calls=1).reservation

    def admit_ahead(
        self,
        task: str,
        scopes: list[str],
        estimate_usd: float,
        tokens: int,
        deadline: float,
        *,
        calls: int,
        tokens_ahead: int | None = None,
        position: int | None = None,
    ) -> Ahead:
        """Admit up to ``calls`` calls like this one in one write (one call when more does not fit now).

        The hold is ``calls`` estimates; each bucket gives ``calls`` requests and ``tokens_ahead``
        tokens (default ``calls`` times ``tokens``). When the budget left or a bucket cannot give
        that much without waiting, this one call is admitted instead. ``position`` (the run's, from
        ``spread``) picks the shards written; a spent spend shard moves it to the next one.
        """
        with self._turn:
            unguarded: set[str] = set()  # counters seen near their cap: held without the margin
            local: set[str] = set()  # scopes on the per-process limit for this admission
            interval = 1.0
            position, spent = self.spread.pick() if position is None else position, set[int]()
            for _ in range(MAX_TRIES + (self.spend.shards if self.spend else 0)):
                now = self._clock.now()
                want = (tokens_ahead or tokens * calls) if calls > 1 else tokens
                live = [s for s in scopes if s not in local]
                takes = self._plan(live, want, now, deadline, calls, position)
                if takes is None:
                    calls = 1  # a bucket cannot give several calls now: plan one (it may wait)
                    continue
                near = frozenset(unguarded)
                holds = self.spend.holds(task, estimate_usd, now, near, calls, position) if self.spend else []
                try:
                    self._write([h.update for h in holds] + [t.update for t in takes])
                except _Failed as failed:
                    try:
                        self._refused(holds, takes, failed.reasons, now, deadline, unguarded, local)
                    except AheadTooLarge:
                        calls = 1
                    except SpendCapReached as exc:
                        position, calls = self._next_shard(holds[0], spent, exc), 1
                        unguarded.clear()
                    interval = max([interval, *(t.interval for t in takes)])
                    continue
                except (ClientError, BotoCoreError) as exc:
                    why = error_code(exc) if isinstance(exc, ClientError) else type(exc).__name__
                    if self.spend is not None and holds:
                        raise self.spend.unavailable(holds[0].day, why) from exc
                    for take in takes:
                        self._local(take.scope, now, deadline, why)
                    return Ahead(None, 1)
                for take in takes:
                    assert self.limiter is not None  # takes come only from the limiter
                    self.limiter.taken(take)
                return Ahead(self.spend.reservation(task, holds) if self.spend and holds else None, calls)
            raise RateLimited("rate buckets are contended: retry shortly", max(1, math.ceil(interval)))

    @staticmethod
    def _next_shard(hold: Hold, spent: set[int], exc: SpendCapReached) -> int:
        """After ``hold``'s shard proved spent: the next shard's position; ``exc`` when all are."""
        spent.add(hold.shard)
        if len(spent) >= hold.shards:
            raise exc
        return hold.shard + 1

    def admit_together(
        self, task: str, parts: list[Part], deadline: float, position: int | None = None
    ) -> list[Ahead] | None:
        """Admit several models' next calls of one run in ONE write (the day's counters and a shared
        source bucket written once), or None, with nothing written, when that does not fit now.

        Only the plain case is tried: every bucket gives at once, every counter has room beyond
        its near-cap margin, nothing is contended. Anything else is None, and the caller admits one
        model at a time (``admit_ahead``), which handles waits, refusals and damaged items. An
        error whose outcome is unknown (a timeout) is None too: whatever it may have held stays
        charged until the day ends, the safe direction, as for a run that crashes before it settles.
        """
        with self._turn:
            now, position = self._clock.now(), self.spread.pick() if position is None else position
            wants: dict[str, tuple[int, int]] = {}  # scope -> (tokens, requests), summed over parts
            for part in parts:
                for scope in part.scopes:
                    tokens, requests = wants.get(scope, (0, 0))
                    wants[scope] = (tokens + part.tokens, requests + part.calls)
            takes = []
            for scope, (tokens, requests) in wants.items():
                plan = self.limiter.plan(scope, tokens, now, requests, position) if self.limiter else None
                if isinstance(plan, float):
                    return None
                if plan is not None:
                    takes.append(plan)
            shares = [usd(part.estimate_usd * part.calls) for part in parts]  # exact: they add up to the hold
            total = float(sum(shares, Decimal(0)))
            holds = self.spend.holds(task, total, now, frozenset(), 1, position) if self.spend else []
            try:
                self._write([h.update for h in holds] + [t.update for t in takes])
            except (_Failed, ClientError, BotoCoreError):
                return None
            for take in takes:
                assert self.limiter is not None  # takes come only from the limiter
                self.limiter.taken(take)
            return [
                Ahead(self.spend.part_of(task, holds[0], share) if self.spend else None, part.calls)
                for part, share in zip(parts, shares, strict=True)
            ]

    def settle(self, reservation: Reservation | None, actual_usd: float) -> None:
        """Replace the held estimate by the actual cost on every counter, in one write."""
        if reservation is None or self.spend is None:
            return
        updates = self.spend.settle_updates(reservation, actual_usd)
        if not updates:
            return
        with self._turn:
            try:
                self._write(updates)
            except (_Failed, ClientError, BotoCoreError) as exc:
                self.spend.settle_failed(reservation, exc)

    def _plan(
        self, scopes: list[str], tokens: int, now: float, deadline: float, calls: int, position: int
    ) -> list[Take] | None:
        """Each limited scope's take of ``calls`` requests and ``tokens``; None when a bucket must wait.

        Several calls are never waited for (None at once: plan one instead); for one call, None
        after sleeping the wait (raises when it cannot wait).
        """
        takes = []
        for scope in scopes:
            plan = self.limiter.plan(scope, tokens, now, calls, position) if self.limiter else None
            if isinstance(plan, float):
                assert self.limiter is not None
                if calls == 1:
                    self.limiter.wait_or_defer(scope, plan, now, deadline)
                return None
            if plan is not None:
                takes.append(plan)
        return takes

    def _refused(
        self,
        holds: list[Hold],
        takes: list[Take],
        reasons: list[dict[str, Any] | None],
        now: float,
        deadline: float,
        unguarded: set[str],
        local: set[str],
    ) -> None:
        """Learn from each failed condition; raise when the budget is spent or the table is damaged."""
        for hold, reason in zip(holds, reasons, strict=False):
            if reason is None or reason.get("Code") == "TransactionConflict":
                continue  # held, or another transaction was on the item: plan again
            assert self.spend is not None
            unguarded |= self.spend.hold_refused(hold, reason.get("Item"), now)
        for take, reason in zip(takes, reasons[len(holds) :], strict=True):
            if reason is None or reason.get("Code") == "TransactionConflict":
                continue  # held, or another transaction was on the item: plan again
            assert self.limiter is not None
            try:
                self.limiter.refused(take, reason.get("Item"))
            except BucketUnavailable:
                local.add(take.scope)
                self._local(take.scope, now, deadline, "damaged bucket")

    def _local(self, scope: str, now: float, deadline: float, why: str) -> None:
        assert self.limiter is not None
        wait = self.limiter.fallback(scope, now, why)
        if wait > 0:
            self.limiter.wait_or_defer(scope, wait, now, deadline)

    def _write(self, updates: list[dict[str, Any]]) -> None:
        """One call: a plain UpdateItem for one update, else one transaction; raise _Failed on conditions."""
        if not updates:
            return
        if len(updates) == 1:
            try:
                self._db.update_item(**updates[0])
            except ClientError as exc:
                if error_code(exc) != "ConditionalCheckFailedException":
                    raise
                item = exc.response.get("Item")
                raise _Failed([{"Code": "ConditionalCheckFailed", "Item": item}]) from exc
            return
        try:
            # The updates are built as plain dicts (the spend and rate modules share their shape).
            items: list[Any] = [{"Update": u} for u in updates]
            self._db.transact_write_items(TransactItems=items)
        except ClientError as exc:
            if error_code(exc) != "TransactionCanceledException":
                raise
            reasons: list[dict[str, Any]] = exc.response.get("CancellationReasons") or []  # type: ignore[assignment]
            codes = {r.get("Code", "None") for r in reasons}
            if len(reasons) != len(updates) or not codes <= {
                "None",
                "ConditionalCheckFailed",
                "TransactionConflict",
            }:
                raise  # throttled, validation, ...: the table is not usable right now
            raise _Failed([None if r.get("Code", "None") == "None" else r for r in reasons]) from exc
