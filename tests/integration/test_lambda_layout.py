"""Each function as Lambda loads it: only its own package and the core layer importable, the
template's environment, the config path as the template gives it. The embedded stack imports
handlers from the repository, where everything is importable; these tests are what would notice
a function deployed without its config, its workflows package or the eval harness."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from lockgate.jobs.state import JobStateStore
from lockgate_infra.local.lambda_layout import LambdaLayout
from lockgate_infra.local.run import seed_secrets
from lockgate_infra.local.stack import LocalStack
from lockgate_infra.stub import StubAnthropic, with_judge
from shop.model import scripted_model

ROOT = Path(__file__).resolve().parents[2]
LAYER = ROOT / "layers" / "core"
FAKE_AWS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
    "POWERTOOLS_METRICS_DISABLED": "true",
    "POWERTOOLS_TRACE_DISABLED": "true",
    "PATH": "/usr/bin:/bin",
}


@pytest.fixture(scope="module")
def stack() -> Iterator[LocalStack]:
    """The template's tables, queues and secrets on a moto server, with the webhook secrets seeded
    (the receiver checks them at cold start); no function is loaded in this process."""
    with LocalStack() as running:
        seed_secrets(running)
        yield running


@pytest.fixture(scope="module")
def layouts(stack: LocalStack, tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], LambdaLayout]:
    """Each function's layout, built once per module (the layer is shared, as in Lambda)."""
    scratch, built = tmp_path_factory.mktemp("lambda"), dict[str, LambdaLayout]()

    def get(function: str) -> LambdaLayout:
        if function not in built:
            built[function] = LambdaLayout.build(stack.plan.functions[function], LAYER, scratch)
        return built[function]

    return get


def env(stack: LocalStack, **overrides: str) -> dict[str, str]:
    return {**FAKE_AWS, "AWS_ENDPOINT_URL": stack.endpoint_url, **overrides}


def scheduled_jobs_of(stack: LocalStack, function: str) -> list[str]:
    return sorted(json.loads(s.input or "{}")["job"] for s in stack.plan.schedules if s.function == function)


FUNCTIONS = (
    "WebhookReceiverFunction",
    "AgentWorkerFunction",
    "ApprovalCallbackFunction",
    "ApprovalNotifierFunction",
    "ScheduledJobsFunction",
    "EvalJobsFunction",
)


def test_every_function_of_the_template_is_checked(stack: LocalStack) -> None:
    assert set(stack.plan.functions) == set(FUNCTIONS)


@pytest.mark.parametrize("function", FUNCTIONS)
def test_given_only_its_own_package_and_the_layer_then_the_handler_imports(
    stack: LocalStack, layouts: Callable[[str], LambdaLayout], function: str
) -> None:
    # Given the function laid out as Lambda loads it
    here = layouts(function)
    # When its module is imported (the cold start), Then it loads: its config and packages are there
    done = here.run("import app; print(callable(app.handler))", env(stack))
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "True"


@pytest.mark.parametrize("function", ["ScheduledJobsFunction", "EvalJobsFunction"])
def test_given_a_jobs_function_then_every_job_its_schedules_send_it_builds_there(
    stack: LocalStack, layouts: Callable[[str], LambdaLayout], function: str
) -> None:
    # Given the jobs the template's schedules send to this function
    names = scheduled_jobs_of(stack, function)
    assert names
    # When each job is built from the function's own registry, resources and package
    script = (
        "import json, app\n"
        f"for name in {names!r}:\n"
        "    app.jobs[name].factory(app.parts.resources)\n"
        "print(json.dumps(sorted(app.jobs)))\n"
    )
    done = layouts(function).run(script, env(stack))
    # Then every one builds (none is JobNotWired where it is scheduled), and the function runs no others
    assert done.returncode == 0, done.stderr[-3000:]
    runs = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(names) <= set(runs)
    if function == "EvalJobsFunction":
        assert runs == ["eval"]


def test_the_eval_job_is_scheduled_on_the_function_that_carries_the_harness(stack: LocalStack) -> None:
    assert scheduled_jobs_of(stack, "EvalJobsFunction") == ["eval"]
    assert "eval" not in scheduled_jobs_of(stack, "ScheduledJobsFunction")


def offline_eval(stack: LocalStack, model: str, *, gate: str) -> dict[str, str]:
    """The eval function's settings for an offline model and judge, one trial per case."""
    return env(
        stack,
        LOCKGATE_EVAL_MODEL=model,
        LOCKGATE_EVAL_JUDGE="stub",
        LOCKGATE_EVAL_RUNS="1",
        LOCKGATE_EVAL_GATE=gate,
    )


def eval_row(stack: LocalStack) -> Any:
    states = JobStateStore(stack.client("dynamodb"), stack.resources["StateTable"]).all()
    return next((s for s in states if s.name == "eval"), None)


def assert_heartbeat_and_no_trial_in_the_stack(stack: LocalStack) -> None:
    """The heartbeat is in the stack's State table (the missed-heartbeat alarm stays quiet), and the
    eval's trials wrote nothing to the stack: its tables hold no run of the suite."""
    row = eval_row(stack)
    assert row is not None and row.last_success_at is not None and row.lease_owner is None
    runs = stack.client("dynamodb").scan(TableName=stack.resources["StateTable"])["Items"]
    assert not [item for item in runs if "eval-" in item["pk"]["S"]]


# Each invocation below runs the whole shipped suite in a child process (~11 s each): `make slow`.
@pytest.mark.slow
def test_given_the_deployed_eval_function_when_the_suite_clears_its_gate_then_the_heartbeat_is_recorded(
    stack: LocalStack, layouts: Callable[[str], LambdaLayout]
) -> None:
    # Given EvalJobsFunction as deployed, told to evaluate the shop with the offline model, once per case
    here = layouts("EvalJobsFunction")
    settings = offline_eval(stack, "shop", gate="0.7")  # 12/12 has a 95% lower bound of 76%
    # When Scheduler's event arrives
    outcome = here.invoke({"job": "eval", "scheduled_time": "2026-11-30T03:00:00Z"}, settings)
    # Then the suite ran on its own moto (in /var/task's harness) and the job succeeded
    assert outcome.get("returned", {}).get("status") == "done", outcome
    # And the heartbeat is recorded, and the trials left nothing in the stack
    assert_heartbeat_and_no_trial_in_the_stack(stack)


@pytest.mark.slow
def test_given_the_deployed_eval_function_when_the_model_falls_for_the_attacks_then_it_fails_loudly(
    stack: LocalStack, layouts: Callable[[str], LambdaLayout]
) -> None:
    # Given a model that obeys injected instructions, and the shipped gate
    here = layouts("EvalJobsFunction")
    settings = offline_eval(stack, "gullible", gate="0.8")
    before = eval_row(stack)
    # When the weekly run comes
    outcome = here.invoke({"job": "eval", "scheduled_time": "2026-12-07T03:00:00Z"}, settings)
    # Then the invocation fails (Lambda's error metric and the EvalJobsErrors alarm see it), naming the gate
    assert outcome.get("raised") == "EvalGateFailed", outcome
    assert "support-inbox" in outcome["message"] and "FAILED" in outcome["message"]
    # And the failure is on the job's row; the last success is not moved forward
    row = eval_row(stack)
    assert row is not None and "support-inbox" in (row.last_error or "")
    assert row.last_success_at == (before.last_success_at if before else None)


@pytest.mark.slow
def test_given_the_templates_own_eval_settings_then_the_suite_talks_to_the_model_with_the_stored_key(
    stack: LocalStack, layouts: Callable[[str], LambdaLayout]
) -> None:
    # Given the model key in Secrets Manager where the template points, and a model endpoint that
    # refuses any other key (the real SDK, a local stand-in for the API that also plays the judge)
    key = "sk-ant-layout-test"
    here = layouts("EvalJobsFunction")
    environment = here.function.environment
    # (under the stack's own name: the template's SecretsPrefix is empty)
    assert environment["ANTHROPIC_API_KEY_REF"] == "secretsmanager:lockgate-local/anthropic-api-key"
    stack.client("secretsmanager").create_secret(Name="lockgate-local/anthropic-api-key", SecretString=key)
    assert (environment["LOCKGATE_EVAL_MODEL"], environment["LOCKGATE_EVAL_RUNS"]) == ("task", "2")
    with StubAnthropic(with_judge(scripted_model()), api_key=key) as api:
        # When the weekly run comes with the template's own settings (model, judge, runs, gate)
        outcome = here.invoke(
            {"job": "eval", "scheduled_time": "2026-12-14T03:00:00Z"},
            env(stack, ANTHROPIC_BASE_URL=api.base_url),
        )
        # Then the suite ran against the model with that key and cleared the shipped gate
        assert outcome.get("returned", {}).get("status") == "done", outcome
        models = {request["model"] for request in api.requests}
    # As the task's own model (the template's ShopModelId; intake reads each email with a cheaper
    # one first), and the judge as the template's judge
    assert stack.plan.functions["AgentWorkerFunction"].environment["SHOP_MODEL"] in models, models
    assert environment["LOCKGATE_EVAL_JUDGE"] in models, models
    # And the heartbeat is recorded, and the trials left nothing in the stack
    assert_heartbeat_and_no_trial_in_the_stack(stack)
