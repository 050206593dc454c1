"""Cost controls through the real loop, SDK and stub: response cache, prompt-cache TTL, daily rollup."""

from __future__ import annotations

from typing import Any

import pytest

from lockgate.actions.facts import RunFacts
from lockgate.agent.tasks import Start, Task
from lockgate.capacity.gate import Gate
from lockgate.capacity.spend import SpendCapReached, SpendCaps
from lockgate.model.client import Usage
from lockgate.model.response_cache import ResponseCache
from lockgate.model.usage import UsageRollup, read_day
from lockgate_infra.stub.models import Scripted
from lockgate_infra.stub.replies import Reply
from tests.agent.conftest import AgentRig, event
from tests.agent.test_loop import DEADLINE, say, tools_turn, use
from tests.agent.toolkit import Effects, make_task
from tests.support import LOG, PRICES


def same_prompt(event: Any, services: Any) -> Start:
    return Start(prompt="Classify this ticket: 'my card was charged twice'.", facts=RunFacts())


def classifier(**overrides: Any) -> Task:
    return make_task(Effects(), name="triage", tools=[], start=same_prompt, **overrides)


def responses(rig: AgentRig) -> ResponseCache:
    return ResponseCache(
        rig.aws.client("dynamodb"), rig.aws.state_table, rig.clock, log=LOG, metrics=rig.metrics
    )


def caps(rig: AgentRig, daily_usd: float) -> SpendCaps:
    db = rig.aws.client("dynamodb")
    return SpendCaps(db, rig.aws.state_table, rig.clock, global_cap_usd=daily_usd, task_caps={},
                     metrics=rig.metrics, log=LOG)  # fmt: skip


def saved_answers(rig: AgentRig) -> list[dict[str, Any]]:
    items = rig.aws.client("dynamodb").scan(TableName=rig.aws.state_table)["Items"]
    return [i for i in items if i["pk"]["S"].startswith("respcache#")]


def test_a_cacheable_task_gets_the_saved_answer_free_even_when_the_budget_is_spent(rig: AgentRig) -> None:
    # Given a classification task whose answer was saved by a first run (one model call)
    rig.stub.set_model(Scripted([Reply([say("billing")])]))
    rig.loop({"responses": responses(rig)}).run(classifier(cacheable=True), event("a"), DEADLINE)
    assert rig.stub.calls == 1
    [saved] = saved_answers(rig)
    assert int(saved["ttl"]["N"]) > rig.clock.now()

    # When the same request comes again and today's budget is zero
    gate = Gate(rig.aws.client("dynamodb"), rig.clock, spend=caps(rig, 0.0), limiter=None)
    spent = {"responses": responses(rig), "gate": gate}
    outcome = rig.loop(spent).run(classifier(cacheable=True), event("b"), DEADLINE)

    # Then it is answered from the State table: no call, a cache hit at zero cost on the run step
    assert outcome.status == "completed" and outcome.summary == "billing"
    assert rig.stub.calls == 1
    run = rig.runs().get("github#b")
    assert run is not None
    step = run.step(1, "model")
    assert step is not None and step.data["cache_hit"] is True
    assert step.data["usage"] == Usage().as_dict()
    assert run.totals["cost_usd"] == 0.0
    assert run.totals["by_model"]["claude-sonnet-5-5"]["cache_hits"] == 1
    assert rig.metrics.totals["ResponseCacheHit"] == 1
    # And a task that is not cacheable is still held to the budget
    with pytest.raises(SpendCapReached):
        rig.loop(spent).run(classifier(), event("c"), DEADLINE)
    assert rig.stub.calls == 1


def test_a_fresh_task_always_asks_the_model(rig: AgentRig) -> None:
    # Given an answer saved for a cacheable twin of the task
    rig.stub.set_model(Scripted([Reply([say("billing")]), Reply([say("refund")])]))
    rig.loop({"responses": responses(rig)}).run(classifier(cacheable=True), event("a"), DEADLINE)
    # When a fresh task sends the identical request
    outcome = rig.loop({"responses": responses(rig)}).run(classifier(fresh=True), event("b"), DEADLINE)
    # Then the model answers it, and nothing more is saved
    assert outcome.summary == "refund" and rig.stub.calls == 2
    assert len(saved_answers(rig)) == 1


def test_a_changed_prompt_is_a_miss_and_the_first_saved_answer_stands(rig: AgentRig) -> None:
    rig.stub.set_model(Scripted([Reply([say("billing")]), Reply([say("other")]), Reply([say("never")])]))
    loop = rig.loop({"responses": responses(rig)})
    loop.run(classifier(cacheable=True), event("a"), DEADLINE)
    # When the system prompt changes, the request is new: the model is asked and its answer saved
    changed = classifier(cacheable=True, system="You classify tickets.")
    assert loop.run(changed, event("b"), DEADLINE).summary == "other"
    assert rig.stub.calls == 2 and len(saved_answers(rig)) == 2
    # And the original request is still answered from its own saved answer
    assert loop.run(classifier(cacheable=True), event("c"), DEADLINE).summary == "billing"
    assert rig.stub.calls == 2


LONG_SYSTEM = "You are a test agent. " + "Follow the house rules carefully and be brief. " * 120


@pytest.mark.parametrize(
    ("overrides", "marker"),
    [
        ({"cache_ttl": "auto", "run_interval_seconds": 1800}, {"type": "ephemeral", "ttl": "1h"}),
        ({"cache_ttl": "auto"}, {"type": "ephemeral"}),
    ],
)
def test_auto_cache_ttl_marks_the_prefix_and_later_steps_read_it(
    rig: AgentRig, overrides: dict[str, Any], marker: dict[str, str]
) -> None:
    # Given a task with a long fixed prefix and cache_ttl="auto" (half-hourly, or unscheduled)
    rig.stub.set_model(
        Scripted(
            [
                tools_turn(use("t1", "lookup", {"item_id": "I-123"})),
                tools_turn(use("t2", "lookup", {"item_id": "I-124"})),
                Reply([say("ok")]),
            ]
        )  # fmt: skip
    )
    task = make_task(Effects(), system=LONG_SYSTEM, **overrides)
    rig.loop().run(task, event(), DEADLINE)
    # Then the chosen lifetime is on the markers
    assert rig.stub.requests[0]["system"][0]["cache_control"] == marker
    # And the run's recorded usage shows a write on step 1 and reads of it (and more) on steps 2+
    run = rig.runs().get("github#d-1")
    assert run is not None
    usages = [s.data["usage"] for s in run.steps if s.kind == "model"]
    assert usages[0]["cache_creation_input_tokens"] > 0 and usages[0]["cache_read_input_tokens"] == 0
    assert all(u["cache_read_input_tokens"] >= usages[0]["cache_creation_input_tokens"] for u in usages[1:])
    # And the run's cost prices the write at the chosen lifetime's multiplier
    ttl = marker.get("ttl", "5m")
    expected = sum(PRICES.cost_usd("claude-sonnet-5-5", Usage(**u), ttl) for u in usages)
    assert run.totals["cost_usd"] == pytest.approx(expected, abs=1e-6)


def test_a_finished_run_is_added_to_the_days_rollup_once(rig: AgentRig) -> None:
    # Given the loop with the daily rollup, and a run of two model calls
    db = rig.aws.client("dynamodb")
    rollup = UsageRollup(db, rig.aws.state_table, rig.clock, log=LOG, metrics=rig.metrics)
    rig.stub.set_model(Scripted([tools_turn(use("t1", "lookup", {"item_id": "I-123"})), Reply([say("ok")])]))
    task = make_task(Effects())
    rig.loop({"rollup": rollup}).run(task, event(), DEADLINE)
    # When the same delivery is run again (a redelivery replays the finished run)
    rig.loop({"rollup": rollup}).run(task, event(), DEADLINE)
    # Then the day's row for the task and model holds the run's totals once
    [row] = read_day(db, rig.aws.state_table, "2026-01-01")
    run = rig.runs().get("github#d-1")
    assert run is not None
    assert (row["task"], row["model"]) == ("test-task", "claude-sonnet-5-5")
    assert row["runs"] == 1 and row["calls"] == 2
    assert float(row["usd"]) == pytest.approx(run.totals["cost_usd"])
    assert row["output_tokens"] == run.totals["usage"]["output_tokens"]
