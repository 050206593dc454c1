"""A Bedrock deployment prices its calls with no typed-in prices, at its endpoint kind's published rate.

Through the worker's composition root, on moto and the stub answering Bedrock's wire format: the
run record's cost, the day's spend counter and the rollup are each at the global or the regional
price that the task's Bedrock id chooses; regional costs AWS's 10% more.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from lockgate.model.client import Usage
from lockgate.model.pricing import cost_usd, endpoint_prices
from lockgate.model.usage import read_day
from lockgate_infra.stub.models import Scripted
from lockgate_infra.stub.replies import Reply
from tests.agent.conftest import AgentRig
from tests.agent.test_batches import SEND
from tests.agent.test_loop import say, tools_turn
from tests.agent.test_model_ids import config, deliver, start
from tests.agent.toolkit import Effects, make_task
from tests.support import day_spent

SONNET = "claude-sonnet-5-5"


def bedrock(bedrock_id: str) -> dict[str, object]:
    return {"provider": {"name": "bedrock", "region": "us-east-1", "bedrock_models": {SONNET: bedrock_id}}}


@pytest.mark.parametrize(
    ("bedrock_id", "endpoint"),
    [
        ("global.anthropic.claude-sonnet-5-5-v1:0", "bedrock-global"),
        ("eu.anthropic.claude-sonnet-5-5-v1:0", "bedrock-regional"),
        ("anthropic.claude-sonnet-5-5-v1:0", "bedrock-regional"),
    ],
)
def test_given_bedrock_without_prices_then_the_run_the_spend_counter_and_the_rollup_use_its_endpoints(
    rig: AgentRig, bedrock_id: str, endpoint: str
) -> None:
    # Given a Bedrock deployment with no [models] prices, a $10 daily cap and a task on Sonnet 5.5
    rig.stub.set_model(Scripted([tools_turn(SEND), Reply([say("sent")])]))
    deployment = config(budget={"daily_usd": 10.0}, **bedrock(bedrock_id))
    assert not deployment.models
    setup = start(rig, deployment, make_task(Effects(), model=SONNET))
    # When its event is delivered
    deliver(rig, setup)
    # Then the run's recorded cost is its usage at that endpoint kind's published price
    run = rig.runs().get("github#d-1")
    assert run is not None and run.status == "completed"
    assert set(rig.stub.wire) == {"bedrock"} and rig.stub.bedrock_ids == [bedrock_id] * 2
    price = endpoint_prices(endpoint)[SONNET].price
    usages = [Usage(**s.data["usage"]) for s in run.steps if s.kind == "model"]
    expected = round(sum(cost_usd(price, usage, "5m") for usage in usages), 6)
    assert expected > 0 and run.totals["cost_usd"] == pytest.approx(expected, abs=1e-6)
    # And today's spend counter and the day's rollup hold exactly that
    spent = day_spent(rig.aws, "2026-01-01")
    assert spent == pytest.approx(Decimal(str(expected)), abs=Decimal("0.000002"))
    [row] = read_day(rig.aws.client("dynamodb"), rig.aws.state_table, "2026-01-01")
    assert float(row["usd"]) == pytest.approx(expected, abs=1e-6)


def test_the_same_usage_costs_ten_percent_more_on_a_regional_endpoint_than_on_global() -> None:
    usage = Usage(
        input_tokens=5_000,
        output_tokens=800,
        cache_creation_input_tokens=3_000,
        cache_read_input_tokens=9_000,
    )
    global_, regional = (endpoint_prices(e)[SONNET].price for e in ("bedrock-global", "bedrock-regional"))
    assert cost_usd(regional, usage) == pytest.approx(1.1 * cost_usd(global_, usage), rel=1e-3)
