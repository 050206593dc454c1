"""Screening calls are model calls like any other: admitted against the caps and buckets, counted."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from lockgate.agent.screen import Screener
from lockgate.capacity.admission import InputTooLarge
from lockgate.capacity.breaker import CircuitOpen
from lockgate.capacity.gate import Gate
from lockgate.capacity.spend import SpendCapReached, SpendCaps
from lockgate.clock import FixedClock
from lockgate.model.client import ModelError, ModelReply, ModelRequest
from lockgate_infra.stub.models import Scripted
from lockgate_infra.stub.replies import Reply
from tests.agent.conftest import AgentRig, event
from tests.agent.test_loop import DEADLINE, say, tools_turn, use
from tests.agent.toolkit import Effects, make_task
from tests.support import LOG

SCREEN_MODEL = "claude-haiku-5-5"


def is_screen(request: dict[str, Any]) -> bool:
    return str(request.get("system", [{}])[0].get("text", "")).startswith("You are a security filter")


def test_a_screen_is_held_against_the_daily_cap_and_counted_in_the_run(rig: AgentRig) -> None:
    # Given a task that screens what it reads, under a $10 daily cap
    effects = Effects()
    effects.pages["https://x.example"] = "Opening hours are 9 to 5."
    scripted = Scripted(
        [tools_turn(use("t1", "fetch_page", {"url": "https://x.example"})), Reply([say("ok")])]
    )
    rig.stub.set_model(lambda request: Reply([say("CLEAN")]) if is_screen(request) else scripted(request))
    db = rig.aws.client("dynamodb")
    caps = SpendCaps(db, rig.aws.state_table, rig.clock, global_cap_usd=10.0, task_caps={},
                     metrics=rig.metrics, log=LOG)  # fmt: skip
    loop = rig.loop({"gate": Gate(db, rig.clock, spend=caps, limiter=None)})
    # When it runs
    loop.run(make_task(effects, screen_model=SCREEN_MODEL), event(), DEADLINE)
    # Then the screen is one of the run's model calls, priced as the screen model
    run = rig.runs().get("github#d-1")
    assert run is not None and not run.totals["suspicious"]
    assert run.totals["model_calls"] == 3 and run.totals["by_model"][SCREEN_MODEL]["calls"] == 1
    assert run.totals["by_model"][SCREEN_MODEL]["usd"] > 0
    # And today's spend settled every call the run made, the screen included
    day = rig.aws.client("dynamodb").get_item(
        TableName=rig.aws.state_table, Key={"pk": {"S": "spend#2026-01-01"}, "sk": {"S": "global"}}
    )["Item"]
    spent = Decimal("10") - Decimal(day["remaining"]["N"])
    assert spent == pytest.approx(Decimal(str(run.totals["cost_usd"])), abs=Decimal("0.000001"))


REQUEST_REFUSED = [
    (ModelError("overloaded", "529", retryable=True, status=529), "screen unavailable (overloaded)"),
    (CircuitOpen("circuit open for claude-haiku-5-5", 30), "screen unavailable (circuit open)"),
    (InputTooLarge("over the limit"), "screen unavailable (content over the task's input limit)"),
]


@pytest.mark.parametrize(("refusal", "flag"), REQUEST_REFUSED)
def test_a_screen_that_cannot_run_flags_the_content(refusal: Exception, flag: str) -> None:
    # Given a screen call that is refused or fails
    def ask(request: ModelRequest, deadline: float) -> ModelReply:
        raise refusal

    # Then the content counts as flagged (fail closed): risky tools in the run need a person
    assert Screener(FixedClock()).screen(SCREEN_MODEL, "text", ask) == flag


def test_a_spent_budget_defers_the_run_instead_of_skipping_the_screen() -> None:
    def ask(request: ModelRequest, deadline: float) -> ModelReply:
        raise SpendCapReached("the daily cap is spent", 3600, "global")

    with pytest.raises(SpendCapReached):
        Screener(FixedClock()).screen(SCREEN_MODEL, "text", ask)
