"""Daily dollar caps on moto: atomic conditional counters in the State table, failing closed.

Every hold goes through ``lockgate.capacity.gate.Gate``, the one way a model call is admitted;
here without rate buckets, so these tests are about the caps alone.
"""

from __future__ import annotations

import threading
from decimal import Decimal
from typing import Any

import pytest

from lockgate.capacity.gate import Gate
from lockgate.capacity.spend import Reservation, SpendCapReached, SpendCaps, SpendUnavailable
from lockgate.clock import FixedClock
from lockgate.errors import Deferred
from lockgate.telemetry import CountingMetrics
from tests.support import LOG, Aws, fail_calls, race

FAR = 10_000_000_000.0  # a deadline that never limits
DAY = "2026-01-01"  # FixedClock's default start is 2026-01-01T00:00:00Z


@pytest.fixture
def metrics() -> CountingMetrics:
    return CountingMetrics()


class Budget:
    """The gate with daily caps and no rate buckets: hold before a call, settle after it."""

    def __init__(self, gate: Gate) -> None:
        self.gate = gate

    def reserve(self, task: str, estimate_usd: float) -> Reservation:
        reservation = self.gate.admit(task, [], estimate_usd, 0, FAR)
        assert reservation is not None
        return reservation

    def settle(self, reservation: Reservation, actual_usd: float) -> None:
        self.gate.settle(reservation, actual_usd)


def caps(aws: Aws, clock: FixedClock, metrics: CountingMetrics, db: Any = None, **kw: Any) -> Budget:
    db = db or aws.client("dynamodb")
    spend = SpendCaps(
        db,
        aws.state_table,
        clock,
        global_cap_usd=kw.get("global_cap", 10.0),
        task_caps=kw.get("task_caps", {"triage": 2.0}),
        metrics=metrics,
        log=LOG,
    )
    return Budget(Gate(db, clock, spend=spend, limiter=None))


def row(aws: Aws, sk: str, day: str = DAY) -> dict[str, Any] | None:
    got = aws.client("dynamodb").get_item(
        TableName=aws.state_table, Key={"pk": {"S": f"spend#{day}"}, "sk": {"S": sk}}, ConsistentRead=True
    )
    return got.get("Item")


def counter(aws: Aws, name: str, day: str = DAY) -> dict[str, Decimal]:
    """A counter's numbers (remaining, spent, cap) from the day's item, which holds every counter."""
    item = row(aws, "global", day)
    assert item is not None
    prefix = "" if name == "global" else f"{name}|"
    return {k: Decimal(item[prefix + k]["N"]) for k in ("remaining", "spent", "cap") if prefix + k in item}


def remaining(aws: Aws, name: str, day: str = DAY) -> Decimal:
    return counter(aws, name, day)["remaining"]


def put_counter(aws: Aws, sk: str, **attrs: dict[str, str]) -> None:
    aws.client("dynamodb").put_item(
        TableName=aws.state_table, Item={"pk": {"S": f"spend#{DAY}"}, "sk": {"S": sk}, **attrs}
    )


def set_on_day_item(aws: Aws, name: str, value: dict[str, str] | None) -> None:
    """Set (or, with None, remove) one attribute of the day's item."""
    db = aws.client("dynamodb")
    where = {"TableName": aws.state_table, "Key": {"pk": {"S": f"spend#{DAY}"}, "sk": {"S": "global"}}}
    if value is None:
        db.update_item(**where, UpdateExpression="REMOVE #a", ExpressionAttributeNames={"#a": name})
    else:
        db.update_item(
            **where,
            UpdateExpression="SET #a = :v",
            ExpressionAttributeNames={"#a": name},
            ExpressionAttributeValues={":v": value},
        )


def test_reserve_within_cap_decrements_both_counters(
    aws: Aws, clock: FixedClock, metrics: CountingMetrics
) -> None:
    # Given a fresh day
    spend = caps(aws, clock, metrics)
    # When a task reserves $0.75
    res = spend.reserve("triage", 0.75)
    # Then the global and the task counter are opened at their caps and hold the estimate
    assert res.counters == ("global", "task#triage")
    assert remaining(aws, "global") == Decimal("9.25")
    assert remaining(aws, "task#triage") == Decimal("1.25")
    item = row(aws, "global")
    assert item is not None
    assert item["cap"]["N"] == "10.000000" and Decimal(item["spent"]["N"]) == Decimal("0.75")
    assert int(item["ttl"]["N"]) == int(clock.now()) + 40 * 86_400


def test_at_the_cap_the_call_is_deferred_to_the_next_utc_midnight(
    aws: Aws, clock: FixedClock, metrics: CountingMetrics
) -> None:
    # Given $9.50 of the $10 global cap spent by an uncapped task, 6 hours into the day
    spend = caps(aws, clock, metrics)
    spend.reserve("digest", 9.5)
    clock.advance(6 * 3600)
    # When the next call needs $0.60
    with pytest.raises(SpendCapReached) as caught:
        spend.reserve("digest", 0.6)
    # Then it is deferred (not dropped) until just after midnight, and the counter is untouched
    assert isinstance(caught.value, Deferred)
    assert caught.value.delay_seconds == 18 * 3600 + 60
    assert caught.value.scope == "global"
    assert remaining(aws, "global") == Decimal("0.5")
    assert metrics.totals["SpendCapReached"] == 1
    # And a call that fits the rest still goes
    spend.reserve("digest", 0.5)
    assert remaining(aws, "global") == 0


@pytest.mark.parametrize(
    ("damage", "expected"),
    [
        ({"remaining": {"S": "lots"}}, SpendUnavailable),  # wrong type
        ({"spent": {"N": "3"}}, SpendUnavailable),  # the attribute is gone
        ({"remaining": {"N": "-4"}}, SpendCapReached),  # below zero: already over the cap
    ],
)
def test_a_damaged_counter_fails_closed_and_is_not_reset(
    aws: Aws, clock: FixedClock, metrics: CountingMetrics, damage: dict[str, Any], expected: type[Exception]
) -> None:
    # Given today's global counter exists but is damaged
    put_counter(aws, "global", **damage)
    before = row(aws, "global")
    spend = caps(aws, clock, metrics)
    # When a call is reserved
    with pytest.raises(expected):
        spend.reserve("triage", 0.01)
    # Then nothing was admitted and the counter is exactly as it was
    assert row(aws, "global") == before
    # And it stays closed on a second try (no self-repair)
    with pytest.raises(expected):
        spend.reserve("triage", 0.01)
    assert row(aws, "global") == before


def test_a_new_utc_day_starts_a_fresh_counter(aws: Aws, clock: FixedClock, metrics: CountingMetrics) -> None:
    # Given today's global cap is spent
    spend = caps(aws, clock, metrics)
    spend.reserve("digest", 10.0)
    with pytest.raises(SpendCapReached):
        spend.reserve("digest", 0.01)
    # When the clock passes midnight UTC
    clock.advance(86_400)
    spend.reserve("digest", 1.0)
    # Then a new day's item has the full cap less the call; yesterday's is untouched
    assert remaining(aws, "global", "2026-01-02") == Decimal("9")
    assert remaining(aws, "global") == 0


def test_settle_refunds_the_over_estimate_and_charges_an_under_estimate(
    aws: Aws, clock: FixedClock, metrics: CountingMetrics
) -> None:
    spend = caps(aws, clock, metrics)
    # Given $1.50 reserved
    res = spend.reserve("triage", 1.5)
    # When the call actually cost $0.20
    spend.settle(res, 0.2)
    # Then $1.30 comes back on both counters and "spent" shows the actual
    assert remaining(aws, "global") == Decimal("9.8")
    assert remaining(aws, "task#triage") == Decimal("1.8")
    assert counter(aws, "task#triage")["spent"] == Decimal("0.2")
    # When a later call cost more than its estimate, the counter may go below zero
    res = spend.reserve("triage", 1.8)
    spend.settle(res, 2.0)
    assert remaining(aws, "task#triage") == Decimal("-0.2")
    # Then the next reserve fails closed
    with pytest.raises(SpendCapReached):
        spend.reserve("triage", 0)


def test_settle_never_creates_a_counter(aws: Aws, clock: FixedClock, metrics: CountingMetrics) -> None:
    spend = caps(aws, clock, metrics)
    res = spend.reserve("triage", 1.0)
    set_on_day_item(aws, "task#triage|remaining", None)
    spend.settle(res, 0.1)
    assert "remaining" not in counter(aws, "task#triage")
    # and the counters settle together: the global one keeps the estimate (an over-count, the
    # safe direction), and the lost settle is said loudly
    assert metrics.totals["SpendSettleFailed"] == 1
    assert remaining(aws, "global") == Decimal("9")


def test_near_cap_metric_fires_once_when_crossing_80_percent(
    aws: Aws, clock: FixedClock, metrics: CountingMetrics
) -> None:
    spend = caps(aws, clock, metrics, task_caps={})
    spend.reserve("digest", 7.9)
    assert "SpendNearCap" not in metrics.totals
    spend.reserve("digest", 0.1)  # exactly 80 %: the crossing
    assert metrics.totals["SpendNearCap"] == 1
    spend.reserve("digest", 0.5)
    spend.reserve("digest", 0.5)
    assert metrics.totals["SpendNearCap"] == 1
    assert remaining(aws, "global") == Decimal("1")


def test_a_task_cap_is_independent_of_the_global_cap(
    aws: Aws, clock: FixedClock, metrics: CountingMetrics
) -> None:
    spend = caps(aws, clock, metrics)
    # Given triage has spent its $2 cap while the global cap has room
    spend.reserve("triage", 2.0)
    # When triage asks again
    with pytest.raises(SpendCapReached) as caught:
        spend.reserve("triage", 0.5)
    # Then it is refused for its own cap, and the global hold taken first was given back
    assert caught.value.scope == "task#triage"
    assert remaining(aws, "global") == Decimal("8")
    # And another task still runs on the global cap
    spend.reserve("digest", 3.0)
    assert remaining(aws, "global") == Decimal("5")
    assert remaining(aws, "task#triage") == 0


def test_ten_threads_against_a_cap_that_fits_four(
    aws: Aws, clock: FixedClock, metrics: CountingMetrics
) -> None:
    # Given a $1 cap for triage, and the day already opened
    spend = caps(aws, clock, metrics, task_caps={"triage": 1.0})
    spend.reserve("triage", 0)
    results: list[str] = []
    barrier = threading.Barrier(10)

    def call() -> None:
        one = caps(aws, clock, metrics, db=aws.client("dynamodb"), task_caps={"triage": 1.0})
        barrier.wait()
        try:
            one.reserve("triage", 0.25)
            results.append("ok")
        except SpendCapReached:
            results.append("capped")

    # When 10 Lambdas reserve $0.25 at once (moto serialised: see docs/design.md)
    race([call] * 10)
    # Then exactly 4 get through and the counters are exact
    assert results.count("ok") == 4 and results.count("capped") == 6
    assert remaining(aws, "task#triage") == 0
    assert remaining(aws, "global") == Decimal("9")


def test_dynamodb_errors_fail_closed(aws: Aws, clock: FixedClock, metrics: CountingMetrics) -> None:
    # Given DynamoDB refuses every write (both counters are held by one update of the day's item)
    db = aws.client("dynamodb")
    fail_calls(db, "UpdateItem", "ProvisionedThroughputExceededException")
    spend = caps(aws, clock, metrics, db=db)
    # When a call is reserved
    with pytest.raises(SpendUnavailable) as caught:
        spend.reserve("triage", 0.1)
    # Then it is deferred briefly (no model call), and no counter exists
    assert isinstance(caught.value, Deferred) and caught.value.delay_seconds == 60
    assert row(aws, "global") is None
    assert metrics.totals["SpendUnavailable"] == 1


def test_the_counters_hold_together_or_not_at_all(
    aws: Aws, clock: FixedClock, metrics: CountingMetrics
) -> None:
    # Given both counters open, and the task counter made unwritable by a wrong type
    spend = caps(aws, clock, metrics)
    spend.reserve("triage", 0.5)
    set_on_day_item(aws, "task#triage|remaining", {"S": "1.5"})
    # When a call is reserved
    with pytest.raises(SpendUnavailable):
        spend.reserve("triage", 0.5)
    # Then the global counter's hold was not written either: nothing to give back
    assert remaining(aws, "global") == Decimal("9.5")


def test_calls_per_reserve(aws: Aws, clock: FixedClock, metrics: CountingMetrics) -> None:
    db = aws.client("dynamodb")
    sent: list[str] = []
    db.meta.events.register(
        "before-send.dynamodb.*",
        lambda request, **_: sent.append(request.headers["X-Amz-Target"].decode().split(".")[-1]),
    )
    spend = caps(aws, clock, metrics, db=db)
    # The day's first reserve opens the day: the hold (refused: no item), one put, the hold
    spend.reserve("triage", 0.1)
    assert sent == ["UpdateItem", "PutItem", "UpdateItem"]
    # An existing day: both counters in one plain update of the one item
    sent.clear()
    res = spend.reserve("triage", 0.1)
    assert sent == ["UpdateItem"]
    # An uncapped task: one counter, one plain update
    sent.clear()
    spend.reserve("digest", 0.1)
    assert sent == ["UpdateItem"]
    # Settling: one plain update for both counters, none when the estimate was exact
    sent.clear()
    spend.settle(res, 0.05)
    assert sent == ["UpdateItem"]
    sent.clear()
    spend.settle(res, 0.1)
    assert sent == []


def test_a_negative_estimate_is_refused(aws: Aws, clock: FixedClock, metrics: CountingMetrics) -> None:
    with pytest.raises(ValueError):
        caps(aws, clock, metrics).reserve("triage", -1)
    assert row(aws, "global") is None


def test_the_loop_defers_before_sending_when_the_daily_cap_is_reached(aws: Aws, clock: FixedClock) -> None:
    # Given an agent whose task has spent its daily cap
    from lockgate_infra.stub.models import Scripted
    from lockgate_infra.stub.replies import Reply
    from lockgate_infra.stub.server import StubAnthropic
    from tests.agent.conftest import AgentRig, event
    from tests.agent.toolkit import Effects, make_task

    with StubAnthropic(
        Scripted([Reply([{"type": "text", "text": "hello"}])] * 3), min_cacheable_tokens=0
    ) as stub:
        rig = AgentRig(aws, stub, clock)
        caps = SpendCaps(
            aws.client("dynamodb"),
            aws.state_table,
            clock,
            global_cap_usd=5.0,
            task_caps={"test-task": 0.02},
            metrics=rig.metrics,
            log=LOG,
        )
        loop = rig.loop()
        loop._calls.gate = Gate(aws.client("dynamodb"), clock, spend=caps, limiter=None)  # noqa: SLF001
        # a first run fits (the reservation is settled to the real, smaller cost)
        assert loop.run(make_task(Effects()), event("a"), 10_000_000_000.0).status == "completed"
        calls = stub.calls
        aws.client("dynamodb").update_item(  # spend the rest of the day's task budget
            TableName=aws.state_table,
            Key={"pk": {"S": f"spend#{DAY}"}, "sk": {"S": "global"}},
            UpdateExpression="SET #r = :z",
            ExpressionAttributeNames={"#r": "task#test-task|remaining"},
            ExpressionAttributeValues={":z": {"N": "0"}},
        )
        # When the next event needs a model call
        with pytest.raises(SpendCapReached) as caught:
            loop.run(make_task(Effects()), event("b"), 10_000_000_000.0)
        # Then nothing was sent, and the event is deferred (not dropped) until the next UTC day
        assert stub.calls == calls
        assert caught.value.delay_seconds > 0


def test_a_day_opened_by_the_earlier_layout_is_read_on_and_its_task_spending_carries_over(
    aws: Aws, clock: FixedClock, metrics: CountingMetrics
) -> None:
    # Given today's counters as the version before this one kept them: one item per counter, the
    # global one being the day's item itself, with $1.60 of the task's $2.00 already spent
    put_counter(aws, "global", remaining={"N": "8.4"}, spent={"N": "1.6"}, cap={"N": "10"})
    put_counter(aws, "task#triage", remaining={"N": "0.4"}, spent={"N": "1.6"}, cap={"N": "2"})
    spend = caps(aws, clock, metrics)
    # When this version holds for the task
    spend.reserve("triage", 0.3)
    # Then the task's counter joined the day's item with what was left and spent, and both moved
    assert counter(aws, "task#triage") == {
        "remaining": Decimal("0.1"),
        "spent": Decimal("1.9"),
        "cap": Decimal("2"),
    }
    assert remaining(aws, "global") == Decimal("8.1")
    # And the task's cap is still kept: the next $0.30 does not fit
    with pytest.raises(SpendCapReached):
        spend.reserve("triage", 0.3)


def test_a_task_capped_after_the_day_opened_gets_its_counter_at_its_cap(
    aws: Aws, clock: FixedClock, metrics: CountingMetrics
) -> None:
    # Given a day opened before the task had a cap
    caps(aws, clock, metrics, task_caps={}).reserve("triage", 1.0)
    # When the task's cap ($2) is configured and the task holds
    caps(aws, clock, metrics).reserve("triage", 0.5)
    # Then its counter starts at its cap on the day's item (earlier spending was not counted to it)
    assert counter(aws, "task#triage") == {
        "remaining": Decimal("1.5"),
        "spent": Decimal("0.5"),
        "cap": Decimal("2"),
    }
    assert remaining(aws, "global") == Decimal("8.5")
