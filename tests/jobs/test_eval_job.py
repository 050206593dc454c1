"""The weekly eval job: runs `lockgate eval` in a child process, isolated from the stack's AWS endpoint."""

from __future__ import annotations

import dataclasses
import logging
import sys
from pathlib import Path

import pytest

from lockgate.clock import FixedClock
from lockgate.config import ProviderConfig, load_config
from lockgate.errors import ConfigError
from lockgate.jobs.contract import JobResources
from lockgate.model.sdk import AwsKeys
from lockgate.telemetry import CountingMetrics
from lockgate_infra.evals.job import EvalGateFailed, EvalJob, _isolated, build
from tests.jobs.conftest import context

ROOT = Path(__file__).resolve().parents[2]


def test_the_child_gets_no_aws_endpoint_and_only_fake_credentials() -> None:
    # Given the environment of a function under `lockgate local` (pointed at the embedded moto server)
    environ = {
        "AWS_ENDPOINT_URL": "http://127.0.0.1:5000",
        "AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:5000",
        "AWS_ACCESS_KEY_ID": "AKIAREAL",
        "INBOX_TABLE": "lockgate-local-InboxTable",
        "PATH": "/usr/bin",
    }
    # Then the eval's own sandbox can never send its calls there
    child = _isolated(environ)
    assert not [k for k in child if k.startswith("AWS_ENDPOINT_URL")]
    assert child["AWS_ACCESS_KEY_ID"] == "testing" and child["PATH"] == "/usr/bin"
    # And none of the functions' resource names
    assert "INBOX_TABLE" not in child


def test_a_suite_that_cannot_run_fails_the_job_loudly(clock: FixedClock) -> None:
    # Given the job told to evaluate a task that has no suite
    job = EvalJob({"LOCKGATE_EVAL_TASKS": "no-such-task", "LOCKGATE_EVAL_RUNS": "1"})
    metrics = CountingMetrics()
    # When it runs, Then it raises (Scheduler retries, the DLQ and the error alarm see it), naming the task
    with pytest.raises(EvalGateFailed, match="no-such-task: exit 2"):
        job(context(clock, metrics))
    assert metrics.totals["EvalGateFailed"] == 1


def _environment_of(job: EvalJob) -> dict[str, str]:
    # What the child process would be given (read from the job, not re-derived here)
    return job._child_environment()


PARENT = {"PATH": "/usr/bin", "ANTHROPIC_API_KEY": "sk-parent", "AWS_ENDPOINT_URL": "http://127.0.0.1:5000"}


def test_an_offline_eval_gets_no_model_key_even_when_this_process_has_one() -> None:
    # Given the offline model and judge, and a key in this process's environment
    asked: list[str] = []
    job = EvalJob(
        {"LOCKGATE_EVAL_TASKS": "support-inbox"}, lambda: asked.append("key") or "sk-x", environ=PARENT
    )
    child = _environment_of(job)
    # Then the child cannot spend money by mistake, and the key was never fetched
    assert "ANTHROPIC_API_KEY" not in child and asked == []
    # And it imports from exactly where this process does (in Lambda: /var/task and the layer)
    assert child["PYTHONPATH"].split(":")[0] == [p for p in sys.path if p][0]


def test_a_real_model_eval_gets_the_key_from_its_reference_and_the_gateway_url() -> None:
    # Given the template's settings: the task's own model, a Claude judge, a gateway URL
    settings = {
        "LOCKGATE_EVAL_TASKS": "support-inbox",
        "LOCKGATE_EVAL_MODEL": "task",
        "LOCKGATE_EVAL_JUDGE": "claude-haiku-5-5",
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:9999",
    }
    child = _environment_of(EvalJob(settings, lambda: "sk-from-secrets-manager", environ=PARENT))
    # Then the child gets the stored key (not this process's) and the URL, and still no AWS endpoint
    assert child["ANTHROPIC_API_KEY"] == "sk-from-secrets-manager"
    assert child["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:9999"
    assert "AWS_ENDPOINT_URL" not in child and child["AWS_ACCESS_KEY_ID"] == "testing"


def test_a_suite_that_outlasts_the_function_fails_the_job_saying_so(clock: FixedClock) -> None:
    # Given one second left before the deadline's margin (the child needs longer just to start)
    from lockgate_infra.evals.job import MARGIN_SECONDS

    job = EvalJob({"LOCKGATE_EVAL_TASKS": "support-inbox", "LOCKGATE_EVAL_RUNS": "1"})
    ctx = dataclasses.replace(context(clock), deadline=clock.now() + MARGIN_SECONDS + 1)
    # When it runs, Then it fails loudly with the remedy, instead of Lambda killing it mid-report
    with pytest.raises(EvalGateFailed, match="did not finish within 1 s .*LOCKGATE_EVAL_RUNS"):
        job(ctx)


@pytest.mark.slow
def test_the_weekly_eval_offline_logs_what_its_judge_is_worth(
    clock: FixedClock, caplog: pytest.LogCaptureFixture
) -> None:
    # Given the weekly job with the offline model and judge, one run per case (too few for the gate)
    job = EvalJob({"LOCKGATE_EVAL_TASKS": "support-inbox", "LOCKGATE_EVAL_RUNS": "1"})
    # When it runs, Then it fails the gate loudly
    with (
        caplog.at_level("INFO", logger="lockgate.tests"),
        pytest.raises(EvalGateFailed, match="gate 80% FAILED"),
    ):
        job(context(clock))
    # And the report it logged says how far its judge's verdicts can be trusted (measured on held-out labels)
    (report,) = [r.report for r in caplog.records if r.getMessage() == "eval"]  # type: ignore[attr-defined]
    assert (
        "\njudge: the offline judge agrees with " in report
        and "held-out labels (judge_heldout.toml)" in report
    )


BEDROCK = ProviderConfig(
    name="bedrock", bedrock_models={"claude-sonnet-5-5": "eu.anthropic.claude-sonnet-5-5-v1:0"}
)
ROLE = AwsKeys("ASIAEVALROLE", "role-secret", "role-token", "eu-west-1")


def test_on_bedrock_a_real_model_eval_gets_the_roles_credentials_under_names_of_their_own_and_no_key() -> (
    None
):
    # Given the deployed weekly eval on a Bedrock stage: real Claude, the prod overlay, and a key
    # in this process's environment that must not travel
    settings = {
        "LOCKGATE_EVAL_TASKS": "support-inbox",
        "LOCKGATE_EVAL_MODEL": "task",
        "LOCKGATE_STAGE": "prod",
    }
    asked: list[str] = []
    job = EvalJob(settings, lambda: asked.append("key") or "sk-x", environ=PARENT, provider=BEDROCK,
                  aws_keys=lambda: ROLE)  # fmt: skip
    child = _environment_of(job)
    # Then the child signs with the role's credentials and region, under the eval's own names, and
    # its sandbox still sees only fake AWS credentials
    assert {k: v for k, v in child.items() if k.startswith("LOCKGATE_EVAL_AWS_")} == {
        "LOCKGATE_EVAL_AWS_ACCESS_KEY_ID": "ASIAEVALROLE",
        "LOCKGATE_EVAL_AWS_SECRET_ACCESS_KEY": "role-secret",
        "LOCKGATE_EVAL_AWS_SESSION_TOKEN": "role-token",
        "LOCKGATE_EVAL_AWS_REGION": "eu-west-1",
    }
    assert child["AWS_ACCESS_KEY_ID"] == "testing" and "AWS_ENDPOINT_URL" not in child
    # And no model key was read or passed on; the child loads the stage's config, as the worker does
    assert asked == [] and "ANTHROPIC_API_KEY" not in child
    assert child["LOCKGATE_STAGE"] == "prod"


def test_an_offline_eval_on_bedrock_reads_no_credentials() -> None:
    def refuse() -> AwsKeys:
        raise AssertionError("credentials read for an offline eval")

    child = _environment_of(
        EvalJob({"LOCKGATE_EVAL_TASKS": "support-inbox"}, provider=BEDROCK, aws_keys=refuse)
    )
    assert not [k for k in child if k.startswith("LOCKGATE_EVAL_AWS_")]


def test_the_eval_job_refuses_a_config_on_another_provider_than_its_role(clock: FixedClock) -> None:
    # Given a stack deployed with ModelProvider=bedrock whose config still says Anthropic's API
    resources = JobResources(
        config=load_config(ROOT / "lockgate.toml"),
        client=lambda service: None,
        names={"LOCKGATE_MODEL_PROVIDER": "bedrock", "LOCKGATE_EVAL_TASKS": "support-inbox"},
        clock=clock,
        log=logging.getLogger("test"),
        metrics=CountingMetrics(),
    )
    # Then the job is not built: its role could call neither, and it says what differs
    with pytest.raises(ConfigError, match=r'\[provider\] name is "anthropic" but .* ModelProvider=bedrock'):
        build(resources)
