"""Shared counters over shards: each bound stated in the code holds under concurrent writers.

Concurrency is tested with moto's dispatch serialised (``tests.support.race``), so the winners
are decided by our conditions, not by moto's own races (docs/design.md).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from lockgate.approvals.limits import LimitReached, PendingLimits
from lockgate.capacity.gate import Gate
from lockgate.capacity.ratelimit import Bucket, RateLimiter
from lockgate.capacity.spend import SpendCapReached, SpendCaps
from lockgate.clock import FixedClock
from lockgate.config import ApprovalsConfig
from lockgate.model.usage import ModelTotals, UsageRollup, read_day
from lockgate.shards import count_share, every_shard, share
from lockgate.telemetry import CountingMetrics
from tests.agent.test_pending_limits import proposal
from tests.support import LOG, Aws, day_spent, race, shard_rows, state_row

FAR = 10_000_000_000.0
DAY = "2026-01-01"  # FixedClock's default start


def gate(aws: Aws, clock: FixedClock, shards: int, cap: float = 1.0) -> Gate:
    """A gate with a ``cap`` global and ``triage`` cap over ``shards`` shards, and no rate buckets."""
    db = aws.client("dynamodb")
    spend = SpendCaps(
        db,
        aws.state_table,
        clock,
        global_cap_usd=10.0,
        task_caps={"triage": cap},
        metrics=CountingMetrics(),
        log=LOG,
        shards=shards,
    )
    return Gate(db, clock, spend=spend, limiter=None)


def test_shares_add_up_exactly_to_the_whole() -> None:
    assert sum(share(Decimal("10.000001"), i, 3) for i in range(3)) == Decimal("10.000001")
    assert [count_share(20, i, 16) for i in range(16)] == [2, 2, 2, 2] + [1] * 12
    assert every_shard("pending#t", 1) == ["pending#t"]
    assert every_shard("pending#t", 2) == ["pending#t#s0", "pending#t#s1"]


def test_given_four_shards_when_ten_spenders_race_then_no_cap_is_overspent_and_little_is_left_unused(
    aws: Aws, clock: FixedClock
) -> None:
    # Given a $1 task cap over 4 shards ($0.25 each), the day already opened on every shard
    first = gate(aws, clock, shards=4)
    for position in range(4):
        first.admit_ahead("triage", [], 0.0, 0, FAR, calls=1, position=position)
    results: list[str] = []

    def spender(position: int) -> None:
        try:
            gate(aws, clock, shards=4).admit_ahead("triage", [], 0.1, 0, FAR, calls=1, position=position)
            results.append("held")
        except SpendCapReached:
            results.append("capped")

    # When ten Lambdas hold $0.10 each at once, all starting on the same shard
    race([lambda: spender(0)] * 10)
    # Then each shard took two ($0.20 of its $0.25): eight held, and two refused only once every
    # shard had less than one call's estimate left (4 x $0.05 unused, under the stated 4 x $0.10)
    assert results.count("held") == 8 and results.count("capped") == 2
    assert day_spent(aws, DAY, "task#triage|spent") == Decimal("0.8")
    left = [Decimal(row["task#triage|remaining"]["N"]) for row in shard_rows(aws, f"spend#{DAY}", "global")]
    assert left == [Decimal("0.05")] * 4


def test_given_spend_recorded_unsharded_today_when_the_shards_open_then_it_still_counts(
    aws: Aws, clock: FixedClock
) -> None:
    # Given today's item of the layout before sharding: $0.60 of triage's $1 already spent
    db = aws.client("dynamodb")
    db.put_item(
        TableName=aws.state_table,
        Item={
            "pk": {"S": f"spend#{DAY}"},
            "sk": {"S": "global"},
            **{name: {"N": value} for name, value in (("remaining", "9.4"), ("spent", "0.6"), ("cap", "10"))},
            "task#triage|remaining": {"N": "0.4"},
            "task#triage|spent": {"N": "0.6"},
            "task#triage|cap": {"N": "1"},
        },
    )
    # When a sharded worker spends over its 4 shards until the cap is reached
    sharded = gate(aws, clock, shards=4)
    held = 0
    with pytest.raises(SpendCapReached):
        for position in range(20):
            sharded.admit_ahead("triage", [], 0.1, 0, FAR, calls=1, position=position)
            held += 1
    # Then the shards opened with the $0.40 that was left, not a fresh $1: four more calls
    assert held == 4
    assert day_spent(aws, DAY, "task#triage|spent") == Decimal("0.4")
    # And the anchor says how many shards the day has; its own counters are untouched
    anchor = state_row(aws, f"spend#{DAY}", "global")
    assert anchor is not None and anchor["shards"]["N"] == "4" and anchor["task#triage|spent"]["N"] == "0.6"


def test_a_changed_shard_count_applies_from_the_next_day(aws: Aws, clock: FixedClock) -> None:
    # Given a day opened over 4 shards
    gate(aws, clock, shards=4).admit_ahead("triage", [], 0.1, 0, FAR, calls=1, position=0)
    # When a worker configured with 8, and one with a single shard, hold on it
    gate(aws, clock, shards=8).admit_ahead("triage", [], 0.1, 0, FAR, calls=1, position=6)
    gate(aws, clock, shards=1).admit_ahead("triage", [], 0.1, 0, FAR, calls=1)
    # Then both held on the day's 4 shards (no fifth shard, no hold on the anchor)
    pks = sorted(row["pk"]["S"] for row in shard_rows(aws, f"spend#{DAY}", "global"))
    assert pks == [f"spend#{DAY}#s0", f"spend#{DAY}#s2"] or set(pks) <= {
        f"spend#{DAY}#s{i}" for i in range(4)
    }
    assert day_spent(aws, DAY, "task#triage|spent") == Decimal("0.3")
    anchor = state_row(aws, f"spend#{DAY}", "global")
    assert anchor is not None and "spent" not in anchor


def test_a_settle_goes_back_to_the_shard_it_was_held_on(aws: Aws, clock: FixedClock) -> None:
    # Given a hold of $0.20 on shard 3
    sharded = gate(aws, clock, shards=4)
    reservation = sharded.admit_ahead("triage", [], 0.2, 0, FAR, calls=1, position=3).reservation
    assert reservation is not None and reservation.shard == 3
    # When it is settled at $0.05
    sharded.settle(reservation, 0.05)
    # Then shard 3 alone was charged the real cost
    [row] = shard_rows(aws, f"spend#{DAY}", "global")
    assert row["pk"]["S"] == f"spend#{DAY}#s3" and row["task#triage|spent"]["N"] == "0.050000"


def test_given_a_sharded_bucket_then_its_shards_together_admit_at_most_the_limit(
    aws: Aws, clock: FixedClock
) -> None:
    # Given a 100-a-minute bucket over 4 shards (25 each: a minute's burst is 100 in all)
    limiter = RateLimiter(
        aws.client("dynamodb"),
        aws.state_table,
        clock,
        limits={"model#m": Bucket(100)},
        metrics=CountingMetrics(),
        log=LOG,
        shards=4,
    )
    sharded = Gate(aws.client("dynamodb"), clock, spend=None, limiter=limiter)
    admitted = 0
    # When 150 single calls ask at the same instant, each on its process's next shard
    for _ in range(150):
        plan = limiter.plan("model#m", 0, clock.now(), 1, sharded.spread.pick())
        if isinstance(plan, float):
            continue
        assert plan is not None
        sharded._write([plan.update])  # noqa: SLF001 - the gate's one write, as admission makes it
        limiter.taken(plan)
        admitted += 1
    # Then exactly the minute's burst got through, spread evenly over the four items
    assert admitted == 100
    rows = shard_rows(aws, "bucket#model#m", "rate")
    assert len(rows) == 4 and {Decimal(r["req_tat"]["N"]) for r in rows} == {Decimal(int(clock.now()) + 60)}


def test_a_bucket_too_small_to_share_stays_one_item(aws: Aws, clock: FixedClock) -> None:
    limiter = RateLimiter(
        aws.client("dynamodb"),
        aws.state_table,
        clock,
        limits={},
        metrics=CountingMetrics(),
        log=LOG,
        shards=16,
    )
    assert limiter.shards_of(Bucket(39)) == 1 and limiter.shards_of(Bucket(200)) == 10
    assert limiter.shards_of(Bucket(1000)) == 16


def test_given_sharded_rollups_then_a_day_reads_as_one_row_per_task_and_model(
    aws: Aws, clock: FixedClock
) -> None:
    # Given three runs added over 4 shards, and a row written before sharding
    db = aws.client("dynamodb")
    rollup = UsageRollup(db, aws.state_table, clock, log=LOG, metrics=CountingMetrics(), shards=4)
    for n in range(3):
        totals = ModelTotals(calls=2, usd=0.25)
        assert rollup.add_run(f"run#{n}", "triage", {"claude-haiku-4-5": totals})
    UsageRollup(db, aws.state_table, clock, log=LOG, metrics=CountingMetrics()).add_run(
        "run#old", "triage", {"claude-haiku-4-5": ModelTotals(calls=1, usd=0.5)}
    )
    # When the day is read
    [row] = read_day(db, aws.state_table, DAY, shards=4)
    # Then every shard and the unsharded row add up
    assert (row["task"], row["model"]) == ("triage", "claude-haiku-4-5")
    assert row["runs"] == 4 and row["calls"] == 7 and row["usd"] == Decimal("1.25")
    written = [
        i["pk"]["S"] for i in db.scan(TableName=aws.state_table)["Items"] if i["pk"]["S"].startswith("usage#")
    ]
    assert len(written) >= 2  # spread: not every run on one key


def test_given_a_sharded_task_counter_when_proposals_race_then_exactly_the_cap_is_pending(aws: Aws) -> None:
    # Given a cap of 4 pending per task over 4 shards (one each), per-sender caps out of the way
    config = ApprovalsConfig(max_pending_per_task=4, max_pending_per_sender=100)
    db = aws.client("dynamodb")
    results: list[str] = []

    def propose(n: int) -> None:
        limits = PendingLimits(db, aws.names["ApprovalsTable"], aws.state_table, config, shards=4)
        try:
            limits.propose(proposal(n, order=f"A-{2000 + n}"), 1_800_000_000)
            results.append("pending")
        except LimitReached as refused:
            results.append(refused.limit)

    # When eight proposals on eight orders race
    race([lambda n=n: propose(n) for n in range(8)])  # type: ignore[misc]
    # Then exactly four wait, one on each shard, and four were refused by the task's cap
    assert results.count("pending") == 4 and results.count("task") == 4
    rows = shard_rows(aws, "pending#support-inbox", "holders")
    assert sorted(int(r["n"]["N"]) for r in rows) == [1, 1, 1, 1]


def test_a_released_proposal_gives_its_place_back_on_its_own_shard(aws: Aws) -> None:
    # Given one proposal pending on a 4-shard task counter
    config = ApprovalsConfig(max_pending_per_task=4, max_pending_per_sender=100)
    limits = PendingLimits(
        aws.client("dynamodb"), aws.names["ApprovalsTable"], aws.state_table, config, shards=4
    )
    stored, created = limits.propose(proposal(1), 1_800_000_000)
    assert created
    place: Any = stored.extra["holds"]["task"]
    assert place.startswith("pending#support-inbox#s")
    # When it is released
    limits.release(stored)
    # Then its shard counts it out
    row = state_row(aws, place, "holders")
    assert row is not None and row["n"]["N"] == "0"
