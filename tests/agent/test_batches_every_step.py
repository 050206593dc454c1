"""Every step through Message Batches (``Task(batch="every")``): one batch per step, in turn."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from lockgate.agent.batches import BatchWaiting
from lockgate.agent.runs import Run
from lockgate.capacity.gate import Gate
from lockgate.capacity.spend import SpendCaps
from lockgate.errors import ConfigError
from lockgate.model.client import Usage
from lockgate_infra.stub.models import Scripted
from lockgate_infra.stub.replies import Reply, bad_request
from tests.agent.conftest import AgentRig, event
from tests.agent.test_batches import SEND, batches, collector, job, pending
from tests.agent.test_loop import DEADLINE, say, tools_turn, use
from tests.agent.toolkit import Effects, make_task
from tests.support import LOG, PRICES, state_row

LOOKUP = use("t0", "lookup", {"item_id": "I-123"})
SONNET = "claude-sonnet-5-5"


def spend_gate(rig: AgentRig) -> Gate:
    db = rig.aws.client("dynamodb")
    caps = SpendCaps(
        db, rig.aws.state_table, rig.clock, global_cap_usd=5.0, task_caps={}, metrics=rig.metrics, log=LOG
    )
    return Gate(db, rig.clock, spend=caps, limiter=None)


def spent(rig: AgentRig) -> Decimal:
    row = state_row(rig.aws, "spend#2026-01-01", "global")
    return Decimal(row["spent"]["N"]) if row else Decimal(0)


def the_run(rig: AgentRig) -> Run:
    run = rig.runs().get("github#d-1")
    assert run is not None
    return run


def ledger_rows(rig: AgentRig) -> list[dict[str, Any]]:
    items = rig.aws.client("dynamodb").scan(TableName=rig.aws.state_table)["Items"]
    return [i for i in items if i["pk"]["S"].startswith("op#")]


def test_a_three_step_run_submits_one_batch_per_step_each_after_the_last_answer(rig: AgentRig) -> None:
    # Given an every-step task that looks up, sends, then finishes; daily caps on the gate
    effects = Effects()
    task = make_task(effects, batch="every")
    rig.stub.set_model(Scripted([tools_turn(LOOKUP), tools_turn(SEND), Reply([say("all sent")])]))
    gate = spend_gate(rig)
    desk = batches(rig, gate)
    actual = Decimal(0)

    for n in (1, 2, 3):
        # When the event runs while step n's batch is processing
        rig.stub.batches.hold()
        with pytest.raises(BatchWaiting, match=f"step {n}"):
            rig.loop({"batches": desk}).run(task, event(), DEADLINE)
        # Then step n, and only it, was submitted: its batch lists step n, its price is held
        assert len(rig.stub.batches.requests) == n and rig.stub.calls == 0
        [item] = pending(rig)
        assert item["step"]["N"] == str(n)
        assert spent(rig) > actual
        # And the request carries the answers to the previous step's tool calls
        messages = rig.stub.batches.requests[-1]["params"]["messages"]
        assert len(messages) == 2 * n - 1
        # And a redelivery while it waits submits nothing new and runs no tool again
        with pytest.raises(BatchWaiting):
            rig.loop({"batches": desk}).run(task, event(), DEADLINE)
        assert len(rig.stub.batches.requests) == n
        assert len(effects.sent) == (1 if n == 3 else 0)
        # When the batch ends and the job collects it
        rig.stub.batches.hold(False)
        assert collector(rig, gate)(job(rig)).counts == {"collected": 1, "failed": 0, "waiting": 0}
        # Then its answer is model step n at the batch price, and the hold became that price, once
        reply = the_run(rig).step(n, "model")
        assert reply is not None and reply.data["batch"] is True
        actual += Decimal(str(PRICES.cost_usd(SONNET, Usage(**reply.data["usage"]), batch=True)))
        assert spent(rig) == pytest.approx(actual, abs=Decimal("0.00001"))
        assert pending(rig) == []

    # When the event comes back after the last answer
    outcome = rig.loop({"batches": desk}).run(task, event(), DEADLINE)
    # Then the run completes without a direct call, having sent once (one ledger entry, succeeded)
    assert outcome.status == "completed" and outcome.summary == "all sent"
    assert rig.stub.calls == 0 and len(rig.stub.batches.requests) == 3
    assert len(effects.sent) == 1
    [op] = ledger_rows(rig)
    assert op["state"]["S"] == "SUCCEEDED"
    # And each step is costed at the batch price in the run's totals
    run = the_run(rig)
    assert [s.n for s in run.steps if s.kind == "batch"] == [1, 2, 3]
    usages = [Usage(**s.data["usage"]) for s in run.steps if s.kind == "model"]
    assert len(usages) == 3
    assert run.totals["cost_usd"] == pytest.approx(
        sum(PRICES.cost_usd(SONNET, u, batch=True) for u in usages), abs=1e-6
    )
    assert run.totals["by_model"][SONNET]["batched"] == 3
    # And collecting or redelivering again changes nothing: no submission, no effect, no spend
    assert collector(rig, gate)(job(rig)).counts == {"collected": 0, "failed": 0, "waiting": 0}
    rig.loop({"batches": desk}).run(task, event(), DEADLINE)
    assert len(rig.stub.batches.requests) == 3 and len(effects.sent) == 1
    assert spent(rig) == pytest.approx(actual, abs=Decimal("0.00001"))


def test_a_failed_batch_for_step_two_makes_step_two_directly_and_step_three_is_batched(rig: AgentRig) -> None:
    # Given an every-step task whose step-2 request errors inside its batch
    effects = Effects()
    task = make_task(effects, batch="every")
    rig.stub.set_model(
        Scripted(
            [
                tools_turn(LOOKUP),  # step 1, batched
                bad_request("stub: this one fails in the batch"),  # step 2's batch
                tools_turn(SEND),  # step 2, made directly
                Reply([say("all sent")]),  # step 3, batched again
            ]
        )
    )
    desk = batches(rig)
    with pytest.raises(BatchWaiting, match="step 1"):
        rig.loop({"batches": desk}).run(task, event(), DEADLINE)
    assert collector(rig)(job(rig)).counts["collected"] == 1
    with pytest.raises(BatchWaiting, match="step 2"):
        rig.loop({"batches": desk}).run(task, event(), DEADLINE)
    # When the job finds step 2's request errored
    assert collector(rig)(job(rig)).counts == {"collected": 0, "failed": 1, "waiting": 0}
    # Then the next run calls the model directly for step 2, sends, and submits step 3 as a batch
    with pytest.raises(BatchWaiting, match="step 3"):
        rig.loop({"batches": desk}).run(task, event(), DEADLINE)
    assert rig.stub.calls == 1 and len(rig.stub.batches.requests) == 3 and len(effects.sent) == 1
    assert collector(rig)(job(rig)).counts["collected"] == 1
    outcome = rig.loop({"batches": desk}).run(task, event(), DEADLINE)
    assert outcome.status == "completed" and rig.stub.calls == 1 and len(effects.sent) == 1
    # And only step 2 is recorded as failed in its batch and priced in full
    run = the_run(rig)
    failed = run.step(2, "batch_result")
    assert failed is not None and failed.data == {"outcome": "errored"}
    assert run.step(1, "batch_result") is None and run.step(3, "batch_result") is None
    batched = {s.n: s.data.get("batch", False) for s in run.steps if s.kind == "model"}
    assert batched == {1: True, 2: False, 3: True}
    usages = {s.n: Usage(**s.data["usage"]) for s in run.steps if s.kind == "model"}
    expected = PRICES.cost_usd(SONNET, usages[1], batch=True) + PRICES.cost_usd(SONNET, usages[2])
    expected += PRICES.cost_usd(SONNET, usages[3], batch=True)
    assert run.totals["cost_usd"] == pytest.approx(expected, abs=1e-6)
    assert run.totals["by_model"][SONNET]["batched"] == 2


def test_a_first_step_only_task_makes_step_two_directly(rig: AgentRig) -> None:
    # Given batch=True (as before every-step batches): only the first step is batched
    effects = Effects()
    task = make_task(effects, batch=True)
    rig.stub.set_model(Scripted([tools_turn(SEND), Reply([say("sent")])]))
    desk = batches(rig)
    with pytest.raises(BatchWaiting, match="step 1"):
        rig.loop({"batches": desk}).run(task, event(), DEADLINE)
    # And its pending item is listed the way the previous version listed it: without a step
    db = rig.aws.client("dynamodb")
    [item] = pending(rig)
    db.update_item(
        TableName=rig.aws.state_table,
        Key={"pk": item["pk"], "sk": item["sk"]},
        UpdateExpression="REMOVE step",
    )
    # When it is collected, it is recorded as step 1, and the run finishes with one direct call
    assert collector(rig)(job(rig)).counts["collected"] == 1
    assert rig.loop({"batches": desk}).run(task, event(), DEADLINE).status == "completed"
    assert rig.stub.calls == 1 and len(rig.stub.batches.requests) == 1 and len(effects.sent) == 1
    first = the_run(rig).step(1, "model")
    assert first is not None and first.data["batch"] is True


@pytest.mark.parametrize(
    ("batch", "steps"),
    [(False, []), (True, [1]), ("every", [1, 2, 3, 4])],
)
def test_which_steps_go_through_a_batch(batch: Any, steps: list[int]) -> None:
    task = make_task(Effects(), batch=batch)
    assert [n for n in range(1, 5) if task.batched(n)] == steps


def test_an_unknown_batch_setting_is_refused_when_the_task_is_defined() -> None:
    with pytest.raises(ConfigError, match="batch must be"):
        make_task(Effects(), batch="sometimes")
