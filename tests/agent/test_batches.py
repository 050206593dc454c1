"""Message Batches: submit, collect, and the run completes through the same loop and ledger."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import anthropic
import pytest

from lockgate.agent.batches import PENDING_PK, Batches, BatchWaiting
from lockgate.agent.runs import RunStore
from lockgate.capacity.gate import Gate
from lockgate.capacity.spend import SpendCaps
from lockgate.jobs.builtin.collect_batches import BatchCollector
from lockgate.jobs.contract import JobContext
from lockgate.model.client import Usage
from lockgate_infra.stub.client import stub_client
from lockgate_infra.stub.models import Scripted
from lockgate_infra.stub.replies import Reply, bad_request
from tests.agent.conftest import AgentRig, event
from tests.agent.test_loop import DEADLINE, say, tools_turn, use
from tests.agent.toolkit import Effects, make_task
from tests.support import LOG, PRICES, state_row

SEND = use("t1", "send", {"to": "owner@example.com", "text": "Weekly digest"})


def batches(rig: AgentRig, gate: Gate | None = None) -> Batches:
    db = rig.aws.client("dynamodb")
    return Batches(
        lambda: stub_client(rig.stub.base_url, "test-key"),
        db,
        rig.aws.state_table,
        RunStore(db, rig.aws.state_table, rig.clock),
        rig.clock,
        prices=PRICES,
        log=LOG,
        metrics=rig.metrics,
        gate=gate,
    )


def collector(rig: AgentRig, gate: Gate | None = None) -> BatchCollector:
    db = rig.aws.client("dynamodb")
    return BatchCollector(
        lambda: stub_client(rig.stub.base_url, "test-key"),
        db,
        rig.aws.state_table,
        RunStore(db, rig.aws.state_table, rig.clock),
        prices=PRICES,
        log=LOG,
        gate=gate,
    )


def job(rig: AgentRig) -> JobContext:
    return JobContext("collect-batches", "2026-01-01T00:00:00Z", DEADLINE, rig.clock, LOG, rig.metrics)


def pending(rig: AgentRig) -> list[dict[str, Any]]:
    db = rig.aws.client("dynamodb")
    return db.query(
        TableName=rig.aws.state_table,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": PENDING_PK}},
    )["Items"]


def test_submit_then_collect_then_the_run_completes_once_at_half_price(rig: AgentRig) -> None:
    # Given a batch task whose first reply sends a message, and a held batch desk
    effects = Effects()
    task = make_task(effects, batch=True)
    rig.stub.set_model(Scripted([tools_turn(SEND), Reply([say("sent")])]))
    rig.stub.batches.hold()
    desk = batches(rig)
    loop = rig.loop({"batches": desk})

    # When the event runs: the first call is submitted as a batch and the event is deferred
    with pytest.raises(BatchWaiting):
        loop.run(task, event(), DEADLINE)
    assert rig.stub.calls == 0 and len(rig.stub.batches.requests) == 1
    [item] = pending(rig)
    assert item["run_id"]["S"] == "github#d-1"
    # And a redelivery before the answer is in waits again without a second submission
    with pytest.raises(BatchWaiting):
        rig.loop({"batches": desk}).run(task, event(), DEADLINE)
    assert len(rig.stub.batches.requests) == 1

    # When the collect job runs while the batch is still processing, nothing changes
    assert collector(rig)(job(rig)).counts == {"collected": 0, "failed": 0, "waiting": 1}
    assert len(pending(rig)) == 1

    # When the batch has ended and the job runs again
    rig.stub.batches.hold(False)
    result = collector(rig)(job(rig))
    assert result.done and result.counts == {"collected": 1, "failed": 0, "waiting": 0}
    assert pending(rig) == []

    # Then the resumed run replays the batched reply, sends once, and finishes with a direct call
    outcome = rig.loop({"batches": desk}).run(task, event(), DEADLINE)
    assert outcome.status == "completed"
    assert len(effects.sent) == 1
    assert rig.stub.calls == 1  # only step 2 went to /v1/messages
    run = rig.runs().get("github#d-1")
    assert run is not None
    first = run.step(1, "model")
    assert first is not None and first.data["batch"] is True
    # And step 1 is billed at half price: the run's cost is half of step 1 plus step 2 in full
    usages = [Usage(**s.data["usage"]) for s in run.steps if s.kind == "model"]
    half = PRICES.cost_usd("claude-sonnet-5-5", usages[0], batch=True)
    assert half == pytest.approx(PRICES.cost_usd("claude-sonnet-5-5", usages[0]) / 2, abs=1e-6)
    assert run.totals["cost_usd"] == pytest.approx(
        half + PRICES.cost_usd("claude-sonnet-5-5", usages[1]), abs=1e-6
    )
    assert run.totals["by_model"]["claude-sonnet-5-5"]["batched"] == 1

    # And collecting again or running the delivery again changes nothing
    assert collector(rig)(job(rig)).counts == {"collected": 0, "failed": 0, "waiting": 0}
    rig.loop({"batches": desk}).run(task, event(), DEADLINE)
    assert len(effects.sent) == 1 and rig.stub.calls == 1


def test_the_batch_price_is_held_on_the_daily_caps_and_settled_to_the_actual(rig: AgentRig) -> None:
    # Given daily caps, admitted through the same gate as every direct model call
    db = rig.aws.client("dynamodb")
    caps = SpendCaps(
        db, rig.aws.state_table, rig.clock, global_cap_usd=5.0, task_caps={}, metrics=rig.metrics, log=LOG
    )
    gate = Gate(db, rig.clock, spend=caps, limiter=None)
    task = make_task(Effects(), batch=True)
    rig.stub.set_model(Scripted([tools_turn(SEND), Reply([say("sent")])]))

    def spent() -> Decimal:
        row = state_row(rig.aws, "spend#2026-01-01", "global")
        assert row is not None
        return Decimal(row["spent"]["N"])

    # When the first call is submitted as a batch
    with pytest.raises(BatchWaiting):
        rig.loop({"batches": batches(rig, gate)}).run(task, event(), DEADLINE)
    # Then its upper-bound estimate is held before anything is sent
    held = spent()
    assert held > 0
    # When the job collects the answer
    assert collector(rig, gate)(job(rig)).counts["collected"] == 1
    # Then the hold is replaced by what the batched call cost (half price), once
    run = rig.runs().get("github#d-1")
    assert run is not None
    first = run.step(1, "model")
    assert first is not None
    actual = PRICES.cost_usd("claude-sonnet-5-5", Usage(**first.data["usage"]), batch=True)
    assert spent() == pytest.approx(Decimal(str(actual)), abs=Decimal("0.000002"))
    assert spent() < held
    assert collector(rig, gate)(job(rig)).counts["collected"] == 0 and spent() < held


def test_a_request_that_errors_in_the_batch_is_made_directly(rig: AgentRig) -> None:
    # Given a batch whose request errors
    effects = Effects()
    task = make_task(effects, batch=True)
    desk = batches(rig)
    rig.stub.set_model(lambda request: bad_request("stub: this one fails in the batch"))
    with pytest.raises(BatchWaiting):
        rig.loop({"batches": desk}).run(task, event(), DEADLINE)
    # When the job collects it
    assert collector(rig)(job(rig)).counts == {"collected": 0, "failed": 1, "waiting": 0}
    # Then the next run calls the model directly, at the normal price
    rig.stub.set_model(Scripted([tools_turn(SEND), Reply([say("sent")])]))
    outcome = rig.loop({"batches": desk}).run(task, event(), DEADLINE)
    assert outcome.status == "completed" and rig.stub.calls == 2 and len(effects.sent) == 1
    run = rig.runs().get("github#d-1")
    assert run is not None
    batch_result = run.step(1, "batch_result")
    assert batch_result is not None and batch_result.data == {"outcome": "errored"}
    assert run.totals["by_model"]["claude-sonnet-5-5"]["batched"] == 0


def test_the_stub_answers_the_batch_endpoints_in_the_sdks_shapes(rig: AgentRig) -> None:
    client = stub_client(rig.stub.base_url, "test-key")
    rig.stub.set_model(Scripted([Reply([say("hello")])]))
    params = {"model": "claude-haiku-5-5", "max_tokens": 50, "messages": [{"role": "user", "content": "hi"}]}
    # Given a held batch: in progress, counted as processing, no results yet
    rig.stub.batches.hold()
    batch = client.messages.batches.create(requests=[{"custom_id": "a", "params": params}])
    assert (batch.processing_status, batch.request_counts.processing, batch.results_url) == (
        "in_progress",
        1,
        None,
    )
    # When it ends, the SDK reads the counts and streams the JSON Lines results
    rig.stub.batches.hold(False)
    ended = client.messages.batches.retrieve(batch.id)
    assert ended.processing_status == "ended" and ended.request_counts.succeeded == 1
    [line] = list(client.messages.batches.results(batch.id))
    assert line.custom_id == "a" and line.result.type == "succeeded"
    assert line.result.message.content[0].text == "hello"  # type: ignore[union-attr]
    # And an unknown batch or a duplicate custom_id is refused as the API does
    with pytest.raises(anthropic.NotFoundError):
        client.messages.batches.retrieve("msgbatch_nope")
    with pytest.raises(anthropic.BadRequestError):
        client.messages.batches.create(
            requests=[{"custom_id": "x", "params": params}, {"custom_id": "x", "params": params}]
        )
