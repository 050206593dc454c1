"""Model ids at start: an id without a price is refused; one priced in [models] is priced so everywhere.

Through the worker's composition root (``lockgate.runtime.worker``) and the jobs' factories, on
moto and the stub: what is checked and priced here is what deploys.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from pydantic import BaseModel

from lockgate.agent.batches import BatchWaiting
from lockgate.agent.intake import Intake
from lockgate.config import LockgateConfig, parse_config
from lockgate.errors import ConfigError
from lockgate.inbox.routing import Router, TaskContext
from lockgate.jobs.contract import JobResources
from lockgate.jobs.factories import collect_batches
from lockgate.model.client import Usage
from lockgate.model.pricing import PRICES as PUBLISHED_PRICES
from lockgate.model.pricing import Price, cost_usd
from lockgate.model.usage import read_day
from lockgate.runtime.deps import Deps
from lockgate.runtime.worker import agent_tasks, build_worker
from lockgate.secrets import SecretResolver
from lockgate.settings import WorkerSettings
from lockgate.workflows import Setup
from lockgate_infra.stub.models import Scripted
from lockgate_infra.stub.replies import Reply
from tests.agent.conftest import AgentRig, event
from tests.agent.test_batches import SEND, job
from tests.agent.test_loop import say, tools_turn
from tests.agent.toolkit import Effects, make_task
from tests.support import LOG, PRICES, TEST_CONFIG, day_spent, function_env, workflow_env

ALIAS = "claude-haiku-6-latest"  # the id: not in the published table
HAIKU_6 = Price(input=0.80, output=4.00, cache_read=0.08)  # what [models."claude-haiku-6"] says
KNOWN = ", ".join(PUBLISHED_PRICES)
HOW = (
    'has no price: use a known id, or give its prices in lockgate.toml as [models."claude-haiku-6"] '
    "with input, output and cache_read in USD per million tokens. Known ids (dated ids such as "
    "claude-sonnet-4-5-20250929 match their family): "
)


def config(**sections: Any) -> LockgateConfig:
    return parse_config({**TEST_CONFIG, "workflows": {"package": "shop"}, **sections})


def priced() -> dict[str, Any]:
    return {"models": {"claude-haiku-6": {"input": 0.80, "output": 4.00, "cache_read": 0.08}}}


def environment(rig: AgentRig) -> dict[str, str]:
    return {
        **function_env(rig.aws),
        "APPROVALS_TABLE": "",
        "DECISIONS_TABLE": "",
        "ANTHROPIC_API_KEY_REF": "env:KEY",
        "ANTHROPIC_BASE_URL": rig.stub.base_url,
        "KEY": "test-key",
    }


def deps(rig: AgentRig) -> Deps:
    return Deps(rig.aws.client, SecretResolver({"KEY": "test-key"}), rig.clock, LOG, rig.metrics)


def start(rig: AgentRig, deployment: LockgateConfig, *tasks: Any) -> Setup:
    """The worker's agent side for these tasks, as build_worker wires it (raises what it raises).

    The tasks are registered as workflow shop's, as ``load_workflows`` registers a package's.
    """
    setup = Setup(router=Router(), environ={}, client=rig.aws.client, clock=rig.clock, workflow="shop")
    for task in tasks:
        setup.add_task(task)
    agent_tasks(setup, WorkerSettings.from_env(environment(rig)), deployment, deps(rig))
    return setup


def deliver(rig: AgentRig, setup: Setup, delivery_id: str = "d-1") -> None:
    context = TaskContext(
        run_id=f"run#github#{delivery_id}",
        remaining_seconds=lambda: 300.0,
        versions=None,  # type: ignore[arg-type]
        log=LOG,
        metrics=rig.metrics,
    )
    setup.router.route("github", "push")(event(delivery_id), context)


class Request(BaseModel):
    order: str


def intake(*models: str) -> Intake[Request]:
    return Intake(Request, "Read the order number.", lambda event, services: "order A-1", models=models)


def test_given_a_task_with_an_unknown_model_then_the_worker_refuses_to_start_naming_it(rig: AgentRig) -> None:
    # Given the task: a model id Lockgate has no price for, and no [models] entry
    task = make_task(Effects(), name="triage", model=ALIAS)
    # When the worker starts, then it refuses, naming the workflow, the task, the field, what to do
    with pytest.raises(ConfigError) as refused:
        start(rig, config(), task)
    assert str(refused.value) == f'workflow shop, task triage: model "{ALIAS}" {HOW}{KNOWN}'
    assert rig.stub.calls == 0


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"fallback_model": ALIAS}, "fallback_model"),
        ({"screen_model": ALIAS}, "screen_model"),
        ({"intake": intake("claude-haiku-4-5", ALIAS)}, "intake.models"),
    ],
)
def test_every_model_a_task_may_call_is_checked(rig: AgentRig, overrides: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigError) as refused:
        start(rig, config(), make_task(Effects(), name="triage", **overrides))
    assert str(refused.value).startswith(f'workflow shop, task triage: {field} "{ALIAS}" has no price: ')


def test_a_rate_limit_for_an_unknown_model_is_refused_naming_the_config_key(rig: AgentRig) -> None:
    limits = {"capacity": {"models": {ALIAS: {"requests_per_minute": 50}}}}
    with pytest.raises(ConfigError) as refused:
        start(rig, config(**limits), make_task(Effects()))
    assert str(refused.value) == f'lockgate.toml: [capacity.models] key "{ALIAS}" {HOW}{KNOWN}'
    # And priced in [models], the same limit is accepted
    start(rig, config(**limits, **priced()), make_task(Effects()))


def test_a_dated_id_of_a_known_family_is_accepted_and_priced_as_its_family(rig: AgentRig) -> None:
    # Given a task on a dated id of a published model
    rig.stub.set_model(Scripted([Reply([say("ok")])]))
    setup = start(rig, config(), make_task(Effects(), tools=[], model="claude-sonnet-4-5-20250929"))
    # When it runs, then its call is priced at claude-sonnet-4-5's published rates
    deliver(rig, setup)
    run = rig.runs().get("github#d-1")
    assert run is not None and run.status == "completed"
    [step] = [s for s in run.steps if s.kind == "model"]
    expected = cost_usd(PUBLISHED_PRICES["claude-sonnet-4-5"], Usage(**step.data["usage"]))
    assert run.totals["cost_usd"] == expected > 0


def test_given_config_prices_then_the_run_the_spend_counter_and_the_rollup_use_them(rig: AgentRig) -> None:
    # Given [models."claude-haiku-6"] prices, a $10 daily cap and a task on the alias
    rig.stub.set_model(Scripted([tools_turn(SEND), Reply([say("sent")])]))
    deployment = config(budget={"daily_usd": 10.0}, **priced())
    setup = start(rig, deployment, make_task(Effects(), model=ALIAS))
    # When its event is delivered
    deliver(rig, setup)
    # Then the run's recorded cost is its usage at the configured prices
    run = rig.runs().get("github#d-1")
    assert run is not None and run.status == "completed"
    usages = [Usage(**s.data["usage"]) for s in run.steps if s.kind == "model"]
    expected = round(sum(cost_usd(HAIKU_6, usage, "5m") for usage in usages), 6)
    assert len(usages) == 2 and run.totals["cost_usd"] == pytest.approx(expected, abs=1e-6)
    # (not the dearest model's price, which an unknown id used to get: many times more)
    assert PRICES.cost_usd(ALIAS, usages[0]) > 10 * cost_usd(HAIKU_6, usages[0])
    # And today's spend counter was settled to exactly that
    spent = day_spent(rig.aws, "2026-01-01")
    assert spent == pytest.approx(Decimal(str(expected)), abs=Decimal("0.000002"))
    # And the day's rollup (what `lockgate spend` reads) holds the same dollars for the model
    [row] = read_day(rig.aws.client("dynamodb"), rig.aws.state_table, "2026-01-01")
    assert row["model"] == ALIAS and float(row["usd"]) == pytest.approx(expected, abs=1e-6)


def test_given_config_prices_then_a_batched_step_is_held_and_settled_at_them(rig: AgentRig) -> None:
    # Given a batch task on the priced alias under a $10 cap, and the jobs function's collector
    rig.stub.set_model(Scripted([tools_turn(SEND), Reply([say("sent")])]))
    deployment = config(budget={"daily_usd": 10.0}, **priced())
    setup = start(rig, deployment, make_task(Effects(), model=ALIAS, batch=True))
    names = {**environment(rig), "STATE_TABLE": rig.aws.state_table}
    collect = collect_batches(JobResources(deployment, rig.aws.client, names, rig.clock, LOG, rig.metrics))
    # When the first step goes out as a batch, is collected, and the event runs again
    with pytest.raises(BatchWaiting):
        deliver(rig, setup)
    assert collect(job(rig)).counts["collected"] == 1
    deliver(rig, setup)
    # Then step 1 is priced at half the configured rates and step 2 at the full ones, in the run
    run = rig.runs().get("github#d-1")
    assert run is not None and run.status == "completed"
    first, second = [Usage(**s.data["usage"]) for s in run.steps if s.kind == "model"]
    expected = cost_usd(HAIKU_6, first, "5m", batch=True) + cost_usd(HAIKU_6, second, "5m")
    assert run.totals["cost_usd"] == pytest.approx(expected, abs=1e-6)
    # And in today's spend counter, where the collector settled the batch's hold
    spent = day_spent(rig.aws, "2026-01-01")
    assert spent == pytest.approx(Decimal(str(expected)), abs=Decimal("0.000002"))


def test_given_shop_model_names_an_unknown_id_then_the_shop_worker_refuses_to_start(rig: AgentRig) -> None:
    # Given the deployed worker's environment with the template's ShopModelId set to the alias
    environ = {**environment(rig), **workflow_env(), "SHOP_MODEL": ALIAS}
    settings = WorkerSettings.from_env(environ)
    # When the worker is built, then the shop's task is refused with the model it was given
    with pytest.raises(ConfigError) as refused:
        build_worker(settings, config(), deps(rig), environ)
    assert str(refused.value).startswith(f'workflow shop, task support-inbox: model "{ALIAS}" has no price')
    # And with its prices in [models], the same worker starts
    parts = build_worker(settings, config(**priced()), deps(rig), environ)
    assert parts.tasks["support-inbox"].model == ALIAS
