"""A run's allowance: several calls admitted by one write, settled by one, never past a cap."""

from __future__ import annotations

import threading
from decimal import Decimal
from typing import Any

import pytest

from lockgate.capacity.allowance import Allowance, RunAllowances
from lockgate.capacity.gate import Gate
from lockgate.capacity.spend import SpendCapReached, SpendCaps
from lockgate.clock import FixedClock
from lockgate.model.client import ModelError, ModelReply
from lockgate.telemetry import CountingMetrics
from lockgate_infra.stub.models import Scripted
from lockgate_infra.stub.replies import overloaded
from tests.agent.conftest import AgentRig, event
from tests.agent.test_gate import DAY, FAR, SCOPES, gate, remaining
from tests.agent.test_loop import DEADLINE, tools_turn, use
from tests.agent.toolkit import Effects, make_task
from tests.support import LOG, PRICES, Aws, dynamodb_operations, race, state_row


@pytest.fixture
def metrics() -> CountingMetrics:
    return CountingMetrics()


def open_day(aws: Aws, clock: FixedClock, metrics: CountingMetrics, rpm: int) -> tuple[Any, Gate]:
    """A gate on an open day (its counters made by a first, free admission), and its client."""
    db = aws.client("dynamodb")
    g = gate(aws, clock, metrics, db=db, rpm=rpm)
    g.settle(g.admit("triage", SCOPES, 0.0, 0, FAR), 0.0)
    return db, g


def left(aws: Aws) -> tuple[Decimal, Decimal]:
    """The day's remaining dollars: all tasks together, then the triage task's."""
    return remaining(aws, "global"), remaining(aws, "task#triage")


def req_tat(aws: Aws, scope: str) -> Decimal:
    item = state_row(aws, f"bucket#{scope}", "rate")
    assert item is not None
    return Decimal(item["req_tat"]["N"])


def test_four_calls_cost_one_write_before_and_one_after_and_the_counters_keep_what_they_cost(
    aws: Aws, clock: FixedClock, metrics: CountingMetrics
) -> None:
    # Given an open day (global $10, task $5, 100 requests a minute per bucket) and a run's allowance
    db, g = open_day(aws, clock, metrics, rpm=100)
    sent = dynamodb_operations(db)
    run = Allowance(g, "triage", SCOPES, calls=5)
    now = int(clock.now())
    # When four calls estimated at $0.50 are admitted, each costing $0.10
    for _ in range(4):
        run.admit(0.5, 100, FAR)
        run.spent(0.1)
    # Then one transaction admitted them all: five estimates held, five requests taken per bucket
    assert sent == ["TransactWriteItems"]
    assert left(aws) == (Decimal("7.5"), Decimal("2.5"))
    assert all(req_tat(aws, scope) == now + 6 * Decimal("0.6") for scope in SCOPES)  # 1 + 5
    # And when the run stops, one more write leaves exactly what the four calls cost
    run.close()
    assert sent == ["TransactWriteItems", "UpdateItem"]
    assert left(aws) == (Decimal("9.6"), Decimal("4.6"))


def test_a_run_on_two_models_gives_back_both_holds_in_one_write_and_keeps_what_each_cost(
    aws: Aws, clock: FixedClock, metrics: CountingMetrics
) -> None:
    # Given an open day and a run that calls a small model and a large one, five calls ahead each
    db, g = open_day(aws, clock, metrics, rpm=100)
    run = RunAllowances(g, "triage", "github", calls=5)
    small, large = run.for_model("claude-haiku-5-5"), run.for_model("claude-sonnet-5-5")
    assert small is not None and large is not None
    small.admit(0.1, 100, FAR)
    small.spent(0.01)
    large.admit(0.5, 100, FAR)
    large.spent(0.2)
    assert left(aws) == (Decimal("7"), Decimal("2"))
    sent = dynamodb_operations(db)
    # When the run stops
    run.close()
    # Then one write gave back both models' holds, leaving exactly what the two calls cost
    assert sent == ["UpdateItem"]
    assert left(aws) == (Decimal("9.79"), Decimal("4.79"))


def test_a_sixth_call_admits_the_next_five_and_the_settle_counts_both_holds(
    aws: Aws, clock: FixedClock, metrics: CountingMetrics
) -> None:
    g = gate(aws, clock, metrics, rpm=100, cap=20.0)  # global $20, task $10
    run = Allowance(g, "triage", SCOPES, calls=5)
    # When six calls are made (estimates $0.50, each costing $0.20)
    for _ in range(6):
        run.admit(0.5, 100, FAR)
        run.spent(0.2)
    # Then ten estimates are held while the run goes on
    assert remaining(aws, "task#triage") == Decimal("5.0")
    # And after it stops the counters hold the six calls' $1.20
    run.close()
    assert left(aws) == (Decimal("18.8"), Decimal("8.8"))


def test_near_the_cap_the_allowance_holds_one_call_and_never_passes_the_cap(
    aws: Aws, clock: FixedClock, metrics: CountingMetrics
) -> None:
    # Given a task with $1.00 left of its cap and calls estimated at $0.40 (five would need $2.00)
    g = gate(aws, clock, metrics, rpm=100, cap=2.0)  # global $2, task $1
    run = Allowance(g, "triage", SCOPES, calls=5)
    # When calls are made that cost what was estimated
    sent = 0
    with pytest.raises(SpendCapReached):
        for _ in range(5):
            run.admit(0.4, 100, FAR)
            run.spent(0.4)
            sent += 1
    # Then exactly the two that fit went, one admission each, and the cap is exactly kept
    assert sent == 2
    run.close()
    assert remaining(aws, "task#triage") == Decimal("0.2")
    assert metrics.totals["SpendCapReached"] == 1


def test_a_bucket_that_cannot_give_five_calls_now_gives_one_without_waiting(
    aws: Aws, clock: FixedClock, metrics: CountingMetrics
) -> None:
    # Given buckets of 3 requests a minute (five calls would need a wait)
    g = gate(aws, clock, metrics, rpm=3)
    run = Allowance(g, "triage", SCOPES, calls=5)
    now = int(clock.now())
    # When one call is admitted
    run.admit(0.1, 10, FAR)
    # Then it went at once with one request taken from each bucket
    assert clock.now() == now and all(req_tat(aws, scope) == now + 20 for scope in SCOPES)


def test_a_call_that_may_have_been_billed_keeps_its_estimate_when_the_run_stops(
    aws: Aws, clock: FixedClock, metrics: CountingMetrics
) -> None:
    g = gate(aws, clock, metrics, rpm=100)
    run = Allowance(g, "triage", SCOPES, calls=5)
    run.admit(0.5, 100, FAR)
    run.spent(0.5)  # a timeout: the cost is unknown, the estimate stays
    run.admit(0.5, 100, FAR)
    run.spent(0.0)  # an API error: nothing billed
    run.close()
    assert left(aws) == (Decimal("9.5"), Decimal("4.5"))


def test_runs_on_many_lambdas_never_hold_more_than_the_cap(
    aws: Aws, clock: FixedClock, metrics: CountingMetrics
) -> None:
    # Given a task with $5 a day, and eight runs at once on their own Lambdas, each wanting four
    # calls estimated at $0.50 (the eight would need $16)
    gate(aws, clock, metrics, rpm=1000).admit("triage", SCOPES, 0.0, 0, FAR)  # open the day
    sent: list[int] = []
    barrier = threading.Barrier(8)

    def one_run() -> None:
        run = Allowance(gate(aws, clock, metrics, db=aws.client("dynamodb"), rpm=1000), "triage", SCOPES, 5)
        barrier.wait()
        calls = 0
        try:
            for _ in range(4):
                run.admit(0.5, 100, FAR)
                calls += 1
                run.spent(0.5)  # each call costs its whole estimate
        except SpendCapReached:
            pass
        finally:
            run.close()
            sent.append(calls)

    race([one_run] * 8)
    # Then, whatever the interleaving, no more than the cap's ten calls went and the counters hold
    # exactly what went (at least eight: two runs may each hold five calls' estimates while they
    # use four, the price of admitting ahead)
    went = Decimal(sum(sent)) * Decimal("0.5")
    assert 8 <= sum(sent) <= 10
    assert remaining(aws, "task#triage") == Decimal(5) - went >= 0
    assert remaining(aws, "global") == Decimal(10) - went
    day = state_row(aws, f"spend#{DAY}", "global")
    assert day is not None and Decimal(day["task#triage|spent"]["N"]) == went


def test_a_run_expecting_two_models_admits_both_in_one_write_and_settles_both_in_one(
    aws: Aws, clock: FixedClock, metrics: CountingMetrics
) -> None:
    # Given an open day and a run that expects its large model while its first call is on the small one
    db, g = open_day(aws, clock, metrics, rpm=100)
    run = RunAllowances(g, "triage", "github", calls=5)
    run.expect("claude-sonnet-5-5", 0.5, 100)
    sent = dynamodb_operations(db)
    # When the small model's call is admitted, then five calls on the large one
    small, large = run.for_model("claude-haiku-5-5"), run.for_model("claude-sonnet-5-5")
    assert small is not None and large is not None
    small.admit(0.1, 100, FAR)
    small.spent(0.01)
    for _ in range(5):
        large.admit(0.5, 100, FAR)
        large.spent(0.2)
    # Then one transaction held both models' five calls ($0.50 + $2.50) and took the shared source
    # bucket once for all ten calls; the large model's calls needed no write of their own
    assert sent == ["TransactWriteItems"]
    assert left(aws) == (Decimal("7"), Decimal("2"))
    assert req_tat(aws, "source#github") == int(clock.now()) + 11 * Decimal("0.6")  # 1 + 10 requests
    # And when the run stops, one write leaves exactly what the six calls cost
    run.close()
    assert sent == ["TransactWriteItems", "UpdateItem"]
    assert left(aws) == (Decimal("8.99"), Decimal("3.99"))


def test_a_joint_admission_that_does_not_fit_at_once_writes_nothing_and_each_model_is_admitted_alone(
    aws: Aws, clock: FixedClock, metrics: CountingMetrics
) -> None:
    # Given a source bucket of 3 requests a minute: it cannot give both models' ten calls now
    db, g = open_day(aws, clock, metrics, rpm=3)
    run = RunAllowances(g, "triage", "github", calls=5)
    run.expect("claude-sonnet-5-5", 0.5, 100)
    sent = dynamodb_operations(db)
    small = run.for_model("claude-haiku-5-5")
    assert small is not None
    # When the first call is admitted
    small.admit(0.1, 100, FAR)
    # Then the joint write was never sent: the small model was admitted on its own, one call
    assert sent == ["TransactWriteItems"]
    assert remaining(aws, "global") == Decimal("9.9")


def test_runs_admitting_two_models_together_on_many_lambdas_never_hold_more_than_the_cap(
    aws: Aws, clock: FixedClock, metrics: CountingMetrics
) -> None:
    # Given a task with $5 a day and eight runs at once, each expecting two calls on a large model
    # ($1 each) after two on a small one ($0.50 each): together they would need $24
    gate(aws, clock, metrics, rpm=1000).admit("triage", SCOPES, 0.0, 0, FAR)  # open the day
    went: list[Decimal] = []
    barrier = threading.Barrier(8)

    def one_run() -> None:
        run = RunAllowances(
            gate(aws, clock, metrics, db=aws.client("dynamodb"), rpm=1000), "triage", "github", 2
        )
        run.expect("claude-sonnet-5-5", 1.0, 100)
        barrier.wait()
        spent = Decimal(0)
        try:
            for model, usd in (("claude-haiku-5-5", 0.5),) * 2 + (("claude-sonnet-5-5", 1.0),) * 2:
                allowance = run.for_model(model)
                assert allowance is not None
                allowance.admit(usd, 100, FAR)
                allowance.spent(usd)  # each call costs its whole estimate
                spent += Decimal(str(usd))
        except SpendCapReached:
            pass
        finally:
            run.close()
            went.append(spent)

    race([one_run] * 8)
    # Then, whatever the interleaving, the task's counter never went below zero and holds exactly
    # what the calls that went cost
    total = sum(went, Decimal(0))
    assert Decimal(0) < total <= Decimal(5)
    assert remaining(aws, "task#triage") == Decimal(5) - total >= 0
    assert remaining(aws, "global") == Decimal(10) - total
    day = state_row(aws, f"spend#{DAY}", "global")
    assert day is not None and Decimal(day["task#triage|spent"]["N"]) == total


def test_a_run_that_fails_midway_gives_back_what_it_held_and_keeps_what_it_spent(rig: AgentRig) -> None:
    # Given the loop with a daily cap, and a run whose second model call fails (overloaded, no fallback)
    db = rig.aws.client("dynamodb")
    caps = SpendCaps(
        db, rig.aws.state_table, rig.clock, global_cap_usd=5.0, task_caps={}, metrics=rig.metrics, log=LOG
    )
    rig.stub.set_model(Scripted([tools_turn(use("t1", "lookup", {"item_id": "I-123"})), overloaded()]))
    loop = rig.loop({"gate": Gate(db, rig.clock, spend=caps, limiter=None)})
    # When the run stops on the error
    with pytest.raises(ModelError):
        loop.run(make_task(Effects()), event(), DEADLINE)
    # Then the day's counter holds exactly the first call's cost: five estimates were held, the
    # failed call was not billed (the API answered), the rest was given back when the run stopped
    run = rig.runs().get("github#d-1")
    assert run is not None and rig.stub.calls >= 2
    first = ModelReply.from_dict(run.steps[0].data)
    spent = state_row(rig.aws, f"spend#{DAY}", "global")
    assert spent is not None
    assert (
        Decimal(spent["spent"]["N"]) == Decimal(f"{PRICES.cost_usd(first.model, first.usage, '5m'):.6f}") > 0
    )
