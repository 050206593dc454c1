"""Capacity controls on moto: the shared rate bucket (taken through the gate), the circuit breaker
and the retry budget."""

from __future__ import annotations

import threading
from decimal import Decimal
from typing import Any

import pytest

from lockgate.capacity.breaker import CircuitBreaker, CircuitOpen
from lockgate.capacity.gate import Gate
from lockgate.capacity.ratelimit import Bucket, RateLimited, RateLimiter
from lockgate.clock import FixedClock
from lockgate.errors import Deferred
from lockgate.model.retrybudget import RetryBudget
from lockgate.telemetry import CountingMetrics
from tests.support import LOG, Aws, Sleeper, dynamodb_operations, fail_calls, race, state_row

MODEL = "claude-haiku"
SCOPE = f"model#{MODEL}"
FAR = 10_000_000_000.0  # a deadline that never limits


@pytest.fixture
def metrics() -> CountingMetrics:
    return CountingMetrics()


def limiter(
    aws: Aws,
    clock: FixedClock,
    metrics: CountingMetrics,
    *,
    rpm: int = 3,
    tpm: int = 100_000,
    db: Any = None,
    sleep: Any = None,
) -> Buckets:
    db = db or aws.client("dynamodb")
    limiter = RateLimiter(
        db,
        aws.state_table,
        clock,
        limits={f"model#{MODEL}": Bucket(requests_per_minute=rpm, tokens_per_minute=tpm)},
        metrics=metrics,
        log=LOG,
        fallback_per_minute=5,
        sleep=sleep or Sleeper(clock),
    )
    return Buckets(Gate(db, clock, spend=None, limiter=limiter))


class Buckets:
    """The gate with rate buckets and no spend caps: these tests are about the buckets alone."""

    def __init__(self, gate: Gate) -> None:
        self.gate = gate

    def admit(self, scope: str, tokens: int, deadline: float) -> None:
        assert self.gate.admit("triage", [scope], 0.0, tokens, deadline) is None


def breaker(
    aws: Aws, clock: FixedClock, metrics: CountingMetrics, db: Any = None, closed_cache_seconds: float = 0.0
) -> CircuitBreaker:
    return CircuitBreaker(
        db or aws.client("dynamodb"),
        aws.state_table,
        clock,
        closed_cache_seconds=closed_cache_seconds,
        metrics=metrics,
        log=LOG,
    )  # defaults: 5 failures in 60 s open it for 30 s


def tats(aws: Aws) -> tuple[Decimal, Decimal]:
    item = state_row(aws, f"bucket#{SCOPE}", "rate")
    assert item is not None
    return Decimal(item["req_tat"]["N"]), Decimal(item["tok_tat"]["N"])


# -- rate limit -----------------------------------------------------------------------------


def test_requests_under_the_limit_pass_and_move_the_shared_bucket(
    aws: Aws, clock: FixedClock, metrics: CountingMetrics
) -> None:
    # Given 3 requests / minute and 100k tokens / minute
    sleep = Sleeper(clock)
    rate = limiter(aws, clock, metrics, sleep=sleep)
    t0 = Decimal(int(clock.now()))
    # When 3 calls of 1,000 tokens arrive at once
    for _ in range(3):
        rate.admit(SCOPE, 1_000, FAR)
    # Then all pass without waiting, and the row holds a full minute of requests
    assert sleep.waits == []
    assert tats(aws) == (t0 + 60, t0 + Decimal("1.8"))  # 3 x 1,000 tokens at 100k/min = 1.8 s


def test_over_the_limit_waits_once_for_exactly_the_refill(
    aws: Aws, clock: FixedClock, metrics: CountingMetrics
) -> None:
    sleep = Sleeper(clock)
    rate = limiter(aws, clock, metrics, sleep=sleep)
    t0 = Decimal(int(clock.now()))
    for _ in range(3):
        rate.admit(SCOPE, 10, FAR)
    # When a 4th call arrives with time to spare
    rate.admit(SCOPE, 10, FAR)
    # Then it slept once, for one request's interval (20 s at 3/min), then went through
    assert sleep.waits == [20.0]
    assert tats(aws)[0] == t0 + 80


def test_a_wait_that_does_not_fit_the_deadline_defers_the_event(
    aws: Aws, clock: FixedClock, metrics: CountingMetrics
) -> None:
    sleep = Sleeper(clock)
    rate = limiter(aws, clock, metrics, sleep=sleep)
    for _ in range(3):
        rate.admit(SCOPE, 10, FAR)
    before = tats(aws)
    # When the 4th call has only 40 s left (the wait of 20 s + the 30 s margin does not fit)
    with pytest.raises(RateLimited) as caught:
        rate.admit(SCOPE, 10, clock.now() + 40)
    # Then it is deferred with the wait, nothing slept and nothing was taken
    assert isinstance(caught.value, Deferred) and caught.value.delay_seconds == 20
    assert sleep.waits == []
    assert tats(aws) == before
    assert metrics.totals["RateLimited"] == 1


def test_the_bucket_refills_continuously(aws: Aws, clock: FixedClock, metrics: CountingMetrics) -> None:
    rate = limiter(aws, clock, metrics)
    for _ in range(3):
        rate.admit(SCOPE, 10, FAR)
    # When 20 s pass, one request's worth is back; a second one is not
    clock.advance(20)
    rate.admit(SCOPE, 10, clock.now() + 31)
    with pytest.raises(RateLimited):
        rate.admit(SCOPE, 10, clock.now() + 31)


def test_the_tokens_per_minute_limit_applies_on_its_own(
    aws: Aws, clock: FixedClock, metrics: CountingMetrics
) -> None:
    # Given plenty of requests but 1,000 tokens / minute
    rate = limiter(aws, clock, metrics, rpm=100, tpm=1_000)
    t0 = Decimal(int(clock.now()))
    rate.admit(SCOPE, 600, FAR)
    # When a second call needs 600 tokens (1,200 in the minute)
    with pytest.raises(RateLimited) as caught:
        rate.admit(SCOPE, 600, clock.now() + 35)
    # Then it waits for 200 tokens to refill: 12 s; the row shows only the first call
    assert caught.value.delay_seconds == 12
    assert tats(aws) == (t0 + Decimal("0.6"), t0 + 36)


def test_a_call_larger_than_a_minute_of_tokens_takes_an_idle_bucket_and_owes_the_rest(
    aws: Aws, clock: FixedClock, metrics: CountingMetrics
) -> None:
    rate = limiter(aws, clock, metrics, rpm=100, tpm=1_000)
    t0 = Decimal(int(clock.now()))
    rate.admit(SCOPE, 1_500, FAR)  # not refused forever
    assert tats(aws)[1] == t0 + 90
    with pytest.raises(RateLimited) as caught:
        rate.admit(SCOPE, 1, clock.now() + 35)
    assert caught.value.delay_seconds == 31  # 90 s + 0.06 s of tokens, less the 60 s burst


def test_eight_threads_against_three_a_minute_admit_exactly_three(
    aws: Aws, clock: FixedClock, metrics: CountingMetrics
) -> None:
    results: list[str] = []
    barrier = threading.Barrier(8)

    def call() -> None:
        one = limiter(aws, clock, metrics, db=aws.client("dynamodb"))  # a Lambda of its own
        barrier.wait()
        try:
            one.admit(SCOPE, 100, clock.now() + 31)  # too near to wait
            results.append("ok")
        except RateLimited:
            results.append("limited")

    # When 8 Lambdas ask at once (moto serialised: see docs/design.md)
    race([call] * 8)
    # Then exactly 3 go and the bucket holds exactly 3 requests
    assert results.count("ok") == 3 and results.count("limited") == 5
    t0 = Decimal(int(clock.now()))
    assert tats(aws) == (t0 + 60, t0 + Decimal("0.18"))  # 3 x 100 tokens at 100k/min


def test_one_update_item_per_admission(aws: Aws, clock: FixedClock, metrics: CountingMetrics) -> None:
    db = aws.client("dynamodb")
    sent = dynamodb_operations(db)
    rate = limiter(aws, clock, metrics, rpm=10, db=db)
    for _ in range(4):  # an idle bucket, then this process's own known state
        rate.admit(SCOPE, 10, FAR)
    assert sent == ["UpdateItem"] * 4
    # Another Lambda took from the bucket: one failed condition (ALL_OLD, no read), then the write
    limiter(aws, clock, metrics, rpm=10).admit(SCOPE, 10, FAR)
    sent.clear()
    rate.admit(SCOPE, 10, FAR)
    assert sent == ["UpdateItem", "UpdateItem"]


def test_a_model_without_a_bucket_is_not_limited(
    aws: Aws, clock: FixedClock, metrics: CountingMetrics
) -> None:
    db = aws.client("dynamodb")
    sent = dynamodb_operations(db)
    limiter(aws, clock, metrics, db=db).admit("model#other-model", 10**6, FAR)
    assert sent == []


def test_table_down_falls_back_to_a_per_process_limit_and_says_so(
    aws: Aws, clock: FixedClock, metrics: CountingMetrics
) -> None:
    # Given the State table refuses every write
    db = aws.client("dynamodb")
    fail_calls(db, "UpdateItem", "ProvisionedThroughputExceededException")
    sleep = Sleeper(clock)
    rate = limiter(aws, clock, metrics, rpm=1_000, db=db, sleep=sleep)
    # When 6 calls arrive in one minute
    for _ in range(5):
        rate.admit(SCOPE, 10, clock.now() + 45)
    # Then 5 (the fallback limit) pass, the 6th is deferred, and every one is counted
    with pytest.raises(RateLimited) as caught:
        rate.admit(SCOPE, 10, clock.now() + 45)
    assert caught.value.delay_seconds == 60
    assert metrics.totals["RateLimiterFallback"] == 6
    assert state_row(aws, f"bucket#{SCOPE}", "rate") is None
    assert sleep.waits == []
    # And the per-process window slides: a minute later calls pass again
    clock.advance(60)
    rate.admit(SCOPE, 10, clock.now() + 45)


def test_a_damaged_bucket_is_not_repaired_and_the_fallback_limits(
    aws: Aws, clock: FixedClock, metrics: CountingMetrics
) -> None:
    # (a tat of the wrong type would be the other damage; moto raises TypeError on it)
    damaged = {"pk": {"S": f"bucket#{SCOPE}"}, "sk": {"S": "rate"}, "req_tat": {"N": "5"}}
    aws.client("dynamodb").put_item(TableName=aws.state_table, Item=damaged)
    limiter(aws, clock, metrics).admit(SCOPE, 10, FAR)
    assert metrics.totals["RateLimiterFallback"] == 1
    assert state_row(aws, f"bucket#{SCOPE}", "rate") == damaged


# -- circuit breaker ------------------------------------------------------------------------


def breaker_row(aws: Aws) -> dict[str, Any]:
    item = state_row(aws, f"breaker#{MODEL}", "state")
    assert item is not None
    return item


def test_five_failures_in_a_minute_open_the_breaker_and_calls_are_refused(
    aws: Aws, clock: FixedClock, metrics: CountingMetrics
) -> None:
    cb = breaker(aws, clock, metrics)
    # Given 4 failures: still closed
    for _ in range(4):
        cb.record_failure(MODEL)
        clock.advance(5)
    cb.before_call(MODEL)
    assert breaker_row(aws)["state"]["S"] == "closed" and breaker_row(aws)["failures"]["N"] == "4"
    # When the 5th failure comes
    cb.record_failure(MODEL)
    # Then the breaker is open for 30 s and a call is refused without being sent
    item = breaker_row(aws)
    assert item["state"]["S"] == "open"
    assert Decimal(item["opened_until"]["N"]) == Decimal(int(clock.now()) + 30)
    sent: list[str] = []
    clock.advance(10)
    with pytest.raises(CircuitOpen) as caught:
        cb.before_call(MODEL)
        sent.append("model call")
    assert sent == []
    assert isinstance(caught.value, Deferred) and caught.value.delay_seconds == 20
    assert metrics.totals["CircuitOpened"] == 1


def test_a_cached_closed_read_spares_the_table_and_sees_a_circuit_opened_elsewhere_within_its_bound(
    aws: Aws, clock: FixedClock, metrics: CountingMetrics
) -> None:
    # Given a worker that trusts a closed read for 5 s, and another Lambda sharing the breaker
    db = aws.client("dynamodb")
    sent = dynamodb_operations(db)
    here = breaker(aws, clock, metrics, db=db, closed_cache_seconds=5)
    elsewhere = breaker(aws, clock, metrics)
    # When it makes calls in quick succession, it reads the breaker once
    for _ in range(4):
        here.before_call(MODEL)
        clock.advance(1)
    assert sent == ["GetItem"]
    # When the other Lambda opens the circuit
    for _ in range(5):
        elsewhere.record_failure(MODEL)
    assert breaker_row(aws)["state"]["S"] == "open"
    # Then this process may still call until its read is 5 s old, never longer
    here.before_call(MODEL)  # read at t0, now t0 + 4
    clock.advance(1)
    with pytest.raises(CircuitOpen):
        here.before_call(MODEL)
    # And while open every call reads the item (the open state is never cached)
    sent.clear()
    with pytest.raises(CircuitOpen):
        here.before_call(MODEL)
    assert sent == ["GetItem"]


def test_a_failure_in_this_process_drops_its_cached_read(
    aws: Aws, clock: FixedClock, metrics: CountingMetrics
) -> None:
    db = aws.client("dynamodb")
    here = breaker(aws, clock, metrics, db=db, closed_cache_seconds=60)
    here.before_call(MODEL)
    # When its own failures open the circuit
    for _ in range(5):
        here.record_failure(MODEL)
    # Then the very next call is refused, however long a closed read would be trusted
    with pytest.raises(CircuitOpen):
        here.before_call(MODEL)


def test_failures_spread_beyond_the_window_do_not_open_it(
    aws: Aws, clock: FixedClock, metrics: CountingMetrics
) -> None:
    cb = breaker(aws, clock, metrics)
    for _ in range(4):
        cb.record_failure(MODEL)
    clock.advance(61)
    cb.record_failure(MODEL)
    item = breaker_row(aws)
    assert item["state"]["S"] == "closed" and item["failures"]["N"] == "1"
    cb.before_call(MODEL)


def open_breaker(cb: CircuitBreaker, clock: FixedClock) -> None:
    for _ in range(5):
        cb.record_failure(MODEL)
    clock.advance(30)  # the open time is over: half-open


def test_half_open_admits_exactly_one_probe_among_concurrent_callers(
    aws: Aws, clock: FixedClock, metrics: CountingMetrics
) -> None:
    open_breaker(breaker(aws, clock, metrics), clock)
    results: list[str] = []
    barrier = threading.Barrier(2)

    def call() -> None:
        one = breaker(aws, clock, metrics, db=aws.client("dynamodb"))
        barrier.wait()
        try:
            one.before_call(MODEL)
            results.append("probe")
        except CircuitOpen:
            results.append("refused")

    race([call] * 2)
    assert sorted(results) == ["probe", "refused"]
    assert breaker_row(aws)["state"]["S"] == "half_open"


def test_a_successful_probe_closes_the_breaker(aws: Aws, clock: FixedClock, metrics: CountingMetrics) -> None:
    cb = breaker(aws, clock, metrics)
    open_breaker(cb, clock)
    cb.before_call(MODEL)  # the probe
    cb.record_success(MODEL)
    item = breaker_row(aws)
    assert item["state"]["S"] == "closed" and item["failures"]["N"] == "0"
    assert "probe" not in item and "opened_until" not in item
    cb.before_call(MODEL)
    cb.before_call(MODEL)


def test_a_failed_probe_opens_it_again(aws: Aws, clock: FixedClock, metrics: CountingMetrics) -> None:
    cb = breaker(aws, clock, metrics)
    open_breaker(cb, clock)
    cb.before_call(MODEL)
    cb.record_failure(MODEL)
    item = breaker_row(aws)
    assert item["state"]["S"] == "open"
    assert Decimal(item["opened_until"]["N"]) == Decimal(int(clock.now()) + 30)
    with pytest.raises(CircuitOpen):
        cb.before_call(MODEL)


def test_a_probe_that_never_reports_frees_the_probe_after_its_lease(
    aws: Aws, clock: FixedClock, metrics: CountingMetrics
) -> None:
    open_breaker(breaker(aws, clock, metrics), clock)
    breaker(aws, clock, metrics).before_call(MODEL)  # this Lambda dies mid-call
    with pytest.raises(CircuitOpen):
        breaker(aws, clock, metrics).before_call(MODEL)
    clock.advance(30)
    breaker(aws, clock, metrics).before_call(MODEL)  # a new probe


def test_late_failures_while_open_change_nothing(
    aws: Aws, clock: FixedClock, metrics: CountingMetrics
) -> None:
    cb = breaker(aws, clock, metrics)
    open_breaker(cb, clock)
    clock.advance(-20)  # back inside the open time
    before = breaker_row(aws)
    # When calls sent before it opened fail late, from another Lambda
    breaker(aws, clock, metrics).record_failure(MODEL)
    # Then the open time is not extended and nothing is counted
    assert breaker_row(aws) == before
    assert metrics.totals["CircuitOpened"] == 1


def test_successes_while_closed_write_nothing(aws: Aws, clock: FixedClock, metrics: CountingMetrics) -> None:
    db = aws.client("dynamodb")
    sent = dynamodb_operations(db)
    cb = breaker(aws, clock, metrics, db=db)
    cb.before_call(MODEL)
    cb.record_success(MODEL)
    assert sent == ["GetItem"]


def test_table_down_the_breaker_allows_calls_and_counts_it(
    aws: Aws, clock: FixedClock, metrics: CountingMetrics
) -> None:
    db = aws.client("dynamodb")
    fail_calls(db, "GetItem")
    fail_calls(db, "UpdateItem")
    cb = breaker(aws, clock, metrics, db=db)
    cb.before_call(MODEL)
    cb.record_failure(MODEL)
    assert metrics.totals["CircuitBreakerUnavailable"] >= 2
    assert state_row(aws, f"breaker#{MODEL}", "state") is None


# -- retry budget ---------------------------------------------------------------------------


def test_retries_are_capped_at_the_ratio_of_first_attempts(clock: FixedClock) -> None:
    budget = RetryBudget(0.2, min_retries_per_minute=0, clock=clock)
    # Given an endpoint where every call fails and each failure wants to retry 3 times
    sent = 0
    for _ in range(100):
        budget.record_attempt(first=True)
        sent += 1
        for _ in range(3):
            if not budget.allow_retry():
                break
            budget.record_attempt(first=False)
            sent += 1
    # Then retries add at most 20 % load (not 300 %)
    assert sent == 120


def test_the_retry_budget_slides_with_the_minute(clock: FixedClock) -> None:
    budget = RetryBudget(0.5, min_retries_per_minute=1, clock=clock)
    assert budget.allow_retry()  # the floor lets a quiet process retry once
    budget.record_attempt(first=False)
    assert not budget.allow_retry()
    budget.record_attempt(first=True)
    budget.record_attempt(first=True)
    assert budget.allow_retry()  # 1 + 0.5 x 2 = 2 retries allowed
    budget.record_attempt(first=False)
    assert not budget.allow_retry()
    clock.advance(61)
    assert budget.allow_retry()


def test_the_loop_stops_calling_an_endpoint_whose_circuit_is_open(aws: Aws, clock: FixedClock) -> None:
    # Given a model endpoint that keeps answering 529 overloaded
    from lockgate.model.client import ModelError
    from lockgate_infra.stub.models import Scripted
    from lockgate_infra.stub.replies import overloaded
    from lockgate_infra.stub.server import StubAnthropic
    from tests.agent.conftest import AgentRig, event
    from tests.agent.toolkit import Effects, make_task

    with StubAnthropic(Scripted([overloaded()] * 40), min_cacheable_tokens=0) as stub:
        rig = AgentRig(aws, stub, clock)
        loop = rig.loop(max_attempts=2)
        loop._calls.breaker = CircuitBreaker(  # noqa: SLF001
            aws.client("dynamodb"),
            aws.state_table,
            clock,
            failure_threshold=2,
            window_seconds=60,
            open_seconds=30,
            metrics=rig.metrics,
            log=LOG,
        )
        for delivery in ("a", "b"):
            with pytest.raises(ModelError):
                loop.run(make_task(Effects()), event(delivery), 10_000_000_000.0)
        sent = stub.calls
        # When the next event needs the model
        with pytest.raises(CircuitOpen) as caught:
            loop.run(make_task(Effects()), event("c"), 10_000_000_000.0)
        # Then nothing was sent while the circuit is open, and the event waits out the open time
        assert stub.calls == sent and 0 < caught.value.delay_seconds <= 30
