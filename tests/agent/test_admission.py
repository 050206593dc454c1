"""Admission: output cap, input guard, fallback model, rate-limit fallback, retry budget.

The real SDK against the stub server, state on moto; assertions on what the stub received and
on the State table rows.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from lockgate.capacity.admission import Admission, InputTooLarge
from lockgate.capacity.breaker import CircuitBreaker, CircuitOpen
from lockgate.capacity.gate import Gate
from lockgate.capacity.ratelimit import Bucket, RateLimited, RateLimiter
from lockgate.capacity.spend import SpendCaps, input_tokens_upper_bound
from lockgate.clock import FixedClock
from lockgate.errors import PermanentFailure
from lockgate.model.client import ModelError, ModelRequest
from lockgate.model.retrybudget import RetryBudget
from lockgate_infra.stub.accounting import count_input_tokens
from lockgate_infra.stub.models import ByModel, Scripted
from lockgate_infra.stub.replies import Reply, bad_request, overloaded, server_error
from tests.agent.conftest import AgentRig, event
from tests.agent.toolkit import Effects, make_task
from tests.support import LOG, PRICES, day_spent, fail_calls, shard_rows

PRIMARY, FALLBACK = "claude-sonnet-5-5", "claude-haiku-4-5"
FAR = 10_000_000_000.0
DONE = Reply([{"type": "text", "text": "done"}])


def request(max_tokens: int = 4096, text: str = "Summarise the event.") -> ModelRequest:
    return ModelRequest(
        model=PRIMARY,
        system="You are a test agent.",
        tools=[],
        messages=[{"role": "user", "content": text}],
        max_tokens=max_tokens,
    )


def calls(rig: AgentRig, **kw: Any) -> Admission:
    return Admission(
        rig.model_client(max_attempts=kw.pop("max_attempts", 2)), PRICES, metrics=rig.metrics, log=LOG, **kw
    )


def breaker(rig: AgentRig) -> CircuitBreaker:
    db = rig.aws.client("dynamodb")
    return CircuitBreaker(
        db, rig.aws.state_table, rig.clock, failure_threshold=1, metrics=rig.metrics, log=LOG
    )


def state_row(rig: AgentRig, pk: str, sk: str) -> dict[str, Any] | None:
    got = rig.aws.client("dynamodb").get_item(
        TableName=rig.aws.state_table, Key={"pk": {"S": pk}, "sk": {"S": sk}}, ConsistentRead=True
    )
    item: dict[str, Any] | None = got.get("Item")
    return item


# -- output cap ------------------------------------------------------------------------------------


def test_max_tokens_is_clamped_to_the_tasks_output_cap_whatever_the_caller_asks(rig: AgentRig) -> None:
    rig.stub.set_model(Scripted([DONE]))
    task = make_task(Effects(), max_output_tokens=256)
    # When a caller asks for 4,096 output tokens
    calls(rig).create(task, request(max_tokens=4096), FAR, "github")
    # Then the API received the task's cap
    assert rig.stub.requests[0]["max_tokens"] == 256


# -- input guard ----------------------------------------------------------------------------------


def test_an_estimated_prompt_over_the_input_limit_is_refused_before_sending(rig: AgentRig) -> None:
    rig.stub.set_model(Scripted([DONE]))
    big = request(text="word " * 2_000)
    estimate = input_tokens_upper_bound(big.system, big.tools, big.messages)
    task = make_task(Effects(), max_input_tokens=estimate - 1)
    # When the prompt's cautious estimate is over the limit
    with pytest.raises(InputTooLarge) as caught:
        calls(rig).create(task, big, FAR, "github")
    # Then nothing was sent (no count either), and the refusal is permanent, with the sizes in it
    assert rig.stub.calls == 0 and rig.stub.count_requests == []
    assert isinstance(caught.value, PermanentFailure)
    assert f"prompt of {estimate} input tokens (estimated)" in str(caught.value)
    assert rig.metrics.totals["InputTooLarge"] == 1


def test_with_count_tokens_on_the_apis_count_decides(rig: AgentRig) -> None:
    rig.stub.set_model(Scripted([DONE]))
    big = request(text="word " * 2_000)
    counted = count_input_tokens(big.to_params())
    estimate = input_tokens_upper_bound(big.system, big.tools, big.messages)
    assert counted < estimate  # the estimate is cautious; the count is exact
    # Given a limit between the exact count and the estimate
    task = make_task(Effects(), max_input_tokens=counted)
    # When counting is on, the call goes through (the estimate alone would have refused it)
    calls(rig, count_tokens=True).create(task, big, FAR, "github")
    assert len(rig.stub.count_requests) == 1 and rig.stub.calls == 1
    assert "max_tokens" not in rig.stub.count_requests[0]
    # And one token less is refused by the count, before sending
    with pytest.raises(InputTooLarge, match=rf"prompt of {counted} input tokens \(counted by the API\)"):
        calls(rig, count_tokens=True).create(
            make_task(Effects(), max_input_tokens=counted - 1), big, FAR, "github"
        )
    assert rig.stub.calls == 1


def test_an_input_refusal_through_the_loop_is_recorded_on_the_run(rig: AgentRig) -> None:
    rig.stub.set_model(Scripted([DONE]))
    task = make_task(Effects(), max_input_tokens=5)
    with pytest.raises(InputTooLarge):
        rig.loop().run(task, event("big"), FAR)
    run = rig.runs().get("github#big")
    assert run is not None and run.status == "input_too_large"
    assert "over the task's limit of 5" in (run.outcome or "")
    assert rig.stub.calls == 0


# -- fallback model -------------------------------------------------------------------------------


def test_an_open_circuit_on_the_primary_sends_the_call_to_the_fallback_priced_as_the_fallback(
    rig: AgentRig,
) -> None:
    rig.stub.set_model(Scripted([DONE]))
    db = rig.aws.client("dynamodb")
    spend = SpendCaps(
        db, rig.aws.state_table, rig.clock, global_cap_usd=5.0, task_caps={}, metrics=rig.metrics, log=LOG
    )
    cb = breaker(rig)
    cb.record_failure(PRIMARY)  # threshold 1: the primary's circuit is open
    task = make_task(Effects(), fallback_model=FALLBACK)
    # When the task needs a call
    reply = calls(rig, breaker=cb, gate=Gate(db, rig.clock, spend=spend, limiter=None)).create(
        task, request(), FAR, "github"
    )
    # Then only the fallback was asked, and the reply says so
    assert [r["model"] for r in rig.stub.requests] == [FALLBACK]
    assert reply.model == FALLBACK and reply.fallback_from == PRIMARY
    assert reply.as_dict()["fallback_from"] == PRIMARY
    # And the day's spend is the fallback's price for the usage, not the primary's
    spent = state_row(rig, "spend#2026-01-01", "global")
    assert spent is not None
    assert Decimal(spent["spent"]["N"]) == Decimal(f"{PRICES.cost_usd(FALLBACK, reply.usage, '5m'):.6f}")
    assert PRICES.cost_usd(FALLBACK, reply.usage, "5m") != PRICES.cost_usd(PRIMARY, reply.usage, "5m")
    assert rig.metrics.totals["FallbackModelUsed"] == 1


def test_a_primary_still_failing_with_5xx_after_retries_falls_back_and_the_step_records_it(
    rig: AgentRig,
) -> None:
    # Given the primary answers 500 to everything; the fallback answers
    rig.stub.set_model(ByModel({PRIMARY: Scripted([server_error()] * 5)}, default=Scripted([DONE])))
    task = make_task(Effects(), fallback_model=FALLBACK)
    # When the loop runs the task
    outcome = rig.loop(max_attempts=2).run(task, event("fb"), FAR)
    # Then the primary was tried twice, then the fallback answered, and the run step records both models
    assert [r["model"] for r in rig.stub.requests] == [PRIMARY, PRIMARY, FALLBACK]
    assert outcome.status == "completed"
    run = rig.runs().get("github#fb")
    assert run is not None
    step = run.step(1, "model")
    assert step is not None and step.data["model"] == FALLBACK and step.data["fallback_from"] == PRIMARY


def test_without_a_fallback_an_open_circuit_defers_and_a_4xx_never_falls_back(rig: AgentRig) -> None:
    rig.stub.set_model(Scripted([overloaded()]))
    cb = breaker(rig)
    cb.record_failure(PRIMARY)
    with pytest.raises(CircuitOpen):
        calls(rig, breaker=cb, count_tokens=True).create(make_task(Effects()), request(), FAR, "github")
    assert rig.stub.calls == 0 and rig.stub.count_requests == []  # not even asked to count
    # A task with a fallback does not use it for a client error (the request itself is wrong)
    rig.stub.set_model(Scripted([bad_request()]))
    with pytest.raises(ModelError):
        calls(rig).create(make_task(Effects(), fallback_model=FALLBACK), request(), FAR, "github")
    assert [r["model"] for r in rig.stub.requests] == [PRIMARY]


# -- rate limits through admission ------------------------------------------------------------------


def test_both_buckets_are_taken_per_call_and_a_dead_table_falls_back_to_the_per_process_limit(
    rig: AgentRig, clock: FixedClock
) -> None:
    rig.stub.set_model(Scripted([DONE] * 5))
    limits = {f"model#{PRIMARY}": Bucket(100, 1_000_000), "source#github": Bucket(100)}
    db = rig.aws.client("dynamodb")
    admitted = calls(
        rig,
        gate=Gate(
            db,
            clock,
            spend=None,
            limiter=RateLimiter(db, rig.aws.state_table, clock, limits=limits, metrics=rig.metrics, log=LOG),
        ),
    )
    admitted.create(make_task(Effects()), request(), FAR, "github")
    # Then the model's and the source's buckets both moved
    assert state_row(rig, f"bucket#model#{PRIMARY}", "rate") is not None
    assert state_row(rig, "bucket#source#github", "rate") is not None
    # Given the State table now refuses writes
    broken = rig.aws.client("dynamodb")
    for operation in ("UpdateItem", "TransactWriteItems"):
        fail_calls(broken, operation, "ProvisionedThroughputExceededException")
    fallback = RateLimiter(
        broken, rig.aws.state_table, clock, limits=limits, metrics=rig.metrics, log=LOG, fallback_per_minute=2
    )
    admitted = calls(rig, gate=Gate(broken, clock, spend=None, limiter=fallback))
    # When calls keep coming: 2 a minute pass on the per-process limit, the 3rd is deferred
    for _ in range(2):
        admitted.create(make_task(Effects()), request(), clock.now() + 45, "github")
    with pytest.raises(RateLimited):
        admitted.create(make_task(Effects()), request(), clock.now() + 45, "github")
    assert rig.stub.calls == 3
    # (each admission asks two scopes, source then model: 2 + 2 + 1, the 3rd stopped at the source)
    assert rig.metrics.totals["RateLimiterFallback"] == 5


# -- retry budget -------------------------------------------------------------------------------------


def test_retries_stop_when_the_process_retry_budget_is_spent(rig: AgentRig, clock: FixedClock) -> None:
    # Given an overloaded endpoint and a budget allowing retries of 50 % of first attempts, no floor
    rig.stub.set_model(Scripted([overloaded()] * 20))
    budget = RetryBudget(0.5, min_retries_per_minute=0, clock=clock)
    model = rig.model_client(max_attempts=4, retry_budget=budget, metrics=rig.metrics)
    # When 4 calls are made, each wanting up to 3 retries
    for _ in range(4):
        with pytest.raises(ModelError):
            model.create(request(), FAR)
    # Then retries added at most half the first attempts' load: 4 firsts + 2 retries, not 16 requests
    assert rig.stub.calls == 6
    assert rig.metrics.totals["RetryBudgetExhausted"] == 4  # every call ended on a refused retry


# -- wiring ----------------------------------------------------------------------------------------


def test_the_worker_runtime_admits_each_call_through_the_configured_model_and_source_buckets(
    rig: AgentRig, clock: FixedClock
) -> None:
    from dataclasses import replace

    from lockgate.config import BudgetConfig, CapacityConfig, RateLimitConfig
    from lockgate.inbox.routing import Router, TaskContext
    from lockgate.runtime.deps import Deps
    from lockgate.runtime.worker import agent_tasks
    from lockgate.secrets import SecretResolver
    from lockgate.settings import WorkerSettings
    from lockgate.workflows import Setup
    from tests.support import function_env, make_config

    # Given [capacity] limits for the task's model and for the github source, and a daily cap
    rig.stub.set_model(Scripted([DONE]))
    setup = Setup(router=Router(), environ={}, client=rig.aws.client)
    setup.add_task(make_task(Effects(), max_output_tokens=300))
    config = replace(
        make_config(),
        budget=BudgetConfig(daily_usd=5.0),
        capacity=CapacityConfig(
            models={PRIMARY: RateLimitConfig(60, 100_000)}, sources={"github": RateLimitConfig(30)}
        ),
    )
    environ = {
        **function_env(rig.aws),
        "ANTHROPIC_API_KEY_REF": "env:KEY",
        "ANTHROPIC_BASE_URL": rig.stub.base_url,
    }
    deps = Deps(
        client=rig.aws.client,
        secrets=SecretResolver({"KEY": "test-key"}),
        clock=clock,
        log=LOG,
        metrics=rig.metrics,
    )
    agent_tasks(setup, WorkerSettings.from_env(environ), config, deps)
    # When the worker routes a github event to the task
    handler = setup.router.route("github", "push")
    context = TaskContext(
        run_id="run#github#w", remaining_seconds=lambda: 300.0, versions=None, log=LOG, metrics=rig.metrics
    )  # type: ignore[arg-type]
    assert handler(event("w"), context) == "test-task: completed: done"
    # Then both buckets gave the run its next five calls in one take: the model's 60/min is spread
    # over three shards of 20/min (3 s a call), the source's 30/min stays one item (2 s a call);
    # and once the run stopped the day's spend shards hold exactly what its one call cost
    now = Decimal(int(clock.now()))
    [model_bucket] = shard_rows(rig.aws, f"bucket#model#{PRIMARY}", "rate")
    source_bucket = state_row(rig, "bucket#source#github", "rate")
    assert Decimal(model_bucket["req_tat"]["N"]) == now + 15
    assert source_bucket is not None and Decimal(source_bucket["req_tat"]["N"]) == now + 10
    assert Decimal(source_bucket["tok_tat"]["N"]) == now  # requests-only limit
    run = rig.runs().get("run#github#w") or rig.runs().get("github#w")
    assert run is not None
    assert day_spent(rig.aws, "2026-01-01") == Decimal(str(run.totals["cost_usd"])) > 0
    assert rig.stub.requests[0]["max_tokens"] == 300
