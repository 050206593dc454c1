"""The Gate on moto: budget holds and rate-bucket takes in one write, and what a refusal leaves behind."""

from __future__ import annotations

import threading
from decimal import Decimal
from typing import Any

import pytest

from lockgate.capacity.gate import Gate
from lockgate.capacity.ratelimit import Bucket, RateLimited, RateLimiter
from lockgate.capacity.spend import SpendCapReached, SpendCaps, SpendUnavailable
from lockgate.clock import FixedClock
from lockgate.telemetry import CountingMetrics
from tests.support import LOG, Aws, dynamodb_operations, fail_calls, race, state_row

DAY = "2026-01-01"
SCOPES = ["source#github", "model#claude-haiku"]
FAR = 10_000_000_000.0


@pytest.fixture
def metrics() -> CountingMetrics:
    return CountingMetrics()


def gate(
    aws: Aws, clock: FixedClock, metrics: CountingMetrics, *, db: Any = None, rpm: int = 3, cap: float = 10.0
) -> Gate:
    db = db or aws.client("dynamodb")
    spend = SpendCaps(
        db,
        aws.state_table,
        clock,
        global_cap_usd=cap,
        task_caps={"triage": cap / 2},
        metrics=metrics,
        log=LOG,
    )
    limits = {scope: Bucket(rpm, 100_000) for scope in SCOPES}
    limiter = RateLimiter(
        db, aws.state_table, clock, limits=limits, metrics=metrics, log=LOG, sleep=clock.advance
    )
    return Gate(db, clock, spend=spend, limiter=limiter)


def remaining(aws: Aws, counter: str) -> Decimal:
    """A counter's remaining dollars on the day's spend item (every counter is on that one item)."""
    item = state_row(aws, f"spend#{DAY}", "global")
    assert item is not None
    return Decimal(item["remaining" if counter == "global" else f"{counter}|remaining"]["N"])


def test_one_transaction_holds_both_counters_and_takes_both_buckets_then_one_update_settles(
    aws: Aws, clock: FixedClock, metrics: CountingMetrics
) -> None:
    db = aws.client("dynamodb")
    g = gate(aws, clock, metrics, db=db)
    g.admit("triage", SCOPES, 1.0, 500, FAR)  # the day's first call opens the counters
    sent = dynamodb_operations(db)
    # When a call is admitted on an open day and settled
    reservation = g.admit("triage", SCOPES, 1.0, 500, FAR)
    g.settle(reservation, 0.25)
    # Then it took exactly one write before (the day's item and both buckets) and one plain
    # update after (both counters are on the day's item)
    assert sent == ["TransactWriteItems", "UpdateItem"]
    # And both counters hold the actual cost of this call, and both buckets moved twice
    assert remaining(aws, "global") == Decimal("8.75") and remaining(aws, "task#triage") == Decimal("3.75")
    for scope in SCOPES:
        item = state_row(aws, f"bucket#{scope}", "rate")
        assert item is not None and Decimal(item["req_tat"]["N"]) == Decimal(int(clock.now()) + 40)


def test_a_spent_budget_refuses_the_call_and_takes_no_bucket(
    aws: Aws, clock: FixedClock, metrics: CountingMetrics
) -> None:
    g = gate(aws, clock, metrics, cap=1.0)
    g.admit("triage", SCOPES, 0.4, 10, FAR)
    before = {scope: state_row(aws, f"bucket#{scope}", "rate") for scope in SCOPES}
    # When the task's remaining $0.10 cannot hold a $0.20 estimate
    with pytest.raises(SpendCapReached) as caught:
        g.admit("triage", SCOPES, 0.2, 10, FAR)
    # Then nothing moved: the transaction wrote all or nothing
    assert caught.value.scope == "task#triage"
    assert {scope: state_row(aws, f"bucket#{scope}", "rate") for scope in SCOPES} == before
    assert remaining(aws, "global") == Decimal("0.6") and remaining(aws, "task#triage") == Decimal("0.1")
    assert metrics.totals["SpendCapReached"] == 1


def test_crossing_80_percent_is_counted_once_at_one_extra_call(
    aws: Aws, clock: FixedClock, metrics: CountingMetrics
) -> None:
    db = aws.client("dynamodb")
    g = gate(aws, clock, metrics, db=db, rpm=100, cap=10.0)  # global $10, task $5
    g.admit("digest", SCOPES, 7.0, 10, FAR)  # global: $3 left; 80% not crossed yet ($2 mark)
    assert metrics.totals.get("SpendNearCap", 0) == 0
    sent = dynamodb_operations(db)
    # When a call takes the global counter below 20% remaining
    g.admit("digest", SCOPES, 1.5, 10, FAR)
    # Then the guarded hold was refused, the crossing counted, and the hold retried without the margin
    assert sent == ["TransactWriteItems", "TransactWriteItems"]
    assert metrics.totals["SpendNearCap"] == 1 and remaining(aws, "global") == Decimal("1.5")
    # And later calls in the last 20% do not count it again
    g.admit("digest", SCOPES, 0.5, 10, FAR)
    assert metrics.totals["SpendNearCap"] == 1 and remaining(aws, "global") == Decimal("1.0")


def test_an_empty_bucket_waits_then_takes_and_a_wait_past_the_deadline_defers(
    aws: Aws, clock: FixedClock, metrics: CountingMetrics
) -> None:
    g = gate(aws, clock, metrics, rpm=1)
    start = clock.now()
    g.admit("triage", SCOPES, 0.01, 10, FAR)
    g.admit("triage", SCOPES, 0.01, 10, FAR)  # slept for the refill (the injected sleep moves the clock)
    assert clock.now() == start + 60
    with pytest.raises(RateLimited) as caught:
        g.admit("triage", SCOPES, 0.01, 10, clock.now() + 40)
    assert caught.value.delay_seconds == 60
    # Nothing held for the deferred call
    assert remaining(aws, "global") == Decimal("9.98")


def test_table_down_spend_fails_closed_and_without_caps_the_buckets_fall_back(
    aws: Aws, clock: FixedClock, metrics: CountingMetrics
) -> None:
    db = aws.client("dynamodb")
    gate(aws, clock, metrics, db=db).admit("triage", SCOPES, 0.01, 10, FAR)
    for operation in ("UpdateItem", "TransactWriteItems", "PutItem"):
        fail_calls(db, operation, "ProvisionedThroughputExceededException")
    with pytest.raises(SpendUnavailable):
        gate(aws, clock, metrics, db=db).admit("triage", SCOPES, 0.01, 10, FAR)
    limiter = RateLimiter(
        db,
        aws.state_table,
        clock,
        limits={s: Bucket(100) for s in SCOPES},
        metrics=metrics,
        log=LOG,
        fallback_per_minute=1,
    )
    rate_only = Gate(db, clock, spend=None, limiter=limiter)
    assert rate_only.admit("triage", SCOPES, 0.01, 10, FAR) is None
    assert metrics.totals["RateLimiterFallback"] == 2  # both scopes
    with pytest.raises(RateLimited):
        rate_only.admit("triage", SCOPES, 0.01, 10, clock.now() + 40)


def test_a_damaged_bucket_is_left_alone_and_its_scope_uses_the_per_process_limit(
    aws: Aws, clock: FixedClock, metrics: CountingMetrics
) -> None:
    damaged = {"pk": {"S": "bucket#model#claude-haiku"}, "sk": {"S": "rate"}, "req_tat": {"N": "5"}}
    aws.client("dynamodb").put_item(TableName=aws.state_table, Item=damaged)
    gate(aws, clock, metrics).admit("triage", SCOPES, 0.01, 10, FAR)
    assert state_row(aws, "bucket#model#claude-haiku", "rate") == damaged
    assert state_row(aws, "bucket#source#github", "rate") is not None
    assert metrics.totals["RateLimiterFallback"] == 1 and remaining(aws, "global") == Decimal("9.99")


def test_eight_lambdas_against_three_a_minute_admit_exactly_three(
    aws: Aws, clock: FixedClock, metrics: CountingMetrics
) -> None:
    gate(aws, clock, metrics).admit("triage", SCOPES, 0.0, 0, FAR)  # open the day; one request taken
    clock.advance(60)
    results: list[str] = []
    barrier = threading.Barrier(8)

    def call() -> None:
        one = gate(aws, clock, metrics, db=aws.client("dynamodb"))  # a Lambda of its own
        barrier.wait()
        try:
            one.admit("triage", SCOPES, 0.1, 100, clock.now() + 31)  # too near to wait
            results.append("ok")
        except RateLimited:
            results.append("limited")

    race([call] * 8)
    # Then exactly 3 went, and exactly their 3 holds are on the counters
    assert results.count("ok") == 3 and results.count("limited") == 5
    assert remaining(aws, "global") == Decimal("9.7") and remaining(aws, "task#triage") == Decimal("4.7")
