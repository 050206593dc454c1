"""template.yaml and the job registry agree: schedule ↔ job, and an alarm for every schedule."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lockgate.config import load_config
from lockgate.jobs.registry import JobSpec, job_registry
from lockgate.jobs.schedule import ScheduleExpression
from lockgate_infra.cli.iam import statements as statements_of
from lockgate_infra.local.template import load_template

ROOT = Path(__file__).resolve().parents[2]
JOBS_FUNCTIONS = ("ScheduledJobsFunction", "EvalJobsFunction")  # one handler; EvalJobsFunction runs "eval"


@pytest.fixture(scope="module")
def resources() -> dict[str, Any]:
    resources: dict[str, Any] = load_template(ROOT / "template.yaml")["Resources"]
    return resources


@pytest.fixture(scope="module")
def registry() -> dict[str, JobSpec]:
    return job_registry(load_config(ROOT / "lockgate.toml"))


def _of_type(resources: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {k: v["Properties"] for k, v in resources.items() if v["Type"] == kind}


def _job_of(schedule: dict[str, Any]) -> str:
    return str(json.loads(schedule["Target"]["Input"])["job"])


def test_every_schedule_targets_a_registered_job_with_the_same_expression(
    resources: dict[str, Any], registry: dict[str, JobSpec]
) -> None:
    schedules = _of_type(resources, "AWS::Scheduler::Schedule")
    assert schedules, "template.yaml declares no schedules"
    for logical_id, schedule in schedules.items():
        job = _job_of(schedule)
        assert job in registry, f"{logical_id} runs {job!r}, which is not a job in the registry"
        assert schedule["ScheduleExpression"] == registry[job].schedule, logical_id
        assert schedule["ScheduleExpressionTimezone"] == "UTC"
        # The target is a jobs function that runs this job (its JOBS names it, or it runs every job)
        function = schedule["Target"]["Arn"]["Fn::GetAtt"][0]
        assert function in JOBS_FUNCTIONS, logical_id
        runs = resources[function]["Properties"]["Environment"]["Variables"].get("JOBS", "")
        assert not runs or job in runs.split(","), (
            f"{logical_id} sends {job!r} to {function}, which runs {runs}"
        )
        assert "<aws.scheduler.scheduled-time>" in schedule["Target"]["Input"]
        assert schedule["Target"]["RetryPolicy"]["MaximumRetryAttempts"] >= 1
        assert schedule["Target"]["DeadLetterConfig"]["Arn"] == {"Fn::GetAtt": ["ScheduledJobsDLQ", "Arn"]}
        window = schedule["FlexibleTimeWindow"]
        if registry[job].flexible_minutes:
            assert window == {"Mode": "FLEXIBLE", "MaximumWindowInMinutes": registry[job].flexible_minutes}
        else:
            assert window == {"Mode": "OFF"}


def test_every_registered_job_has_exactly_one_schedule(
    resources: dict[str, Any], registry: dict[str, JobSpec]
) -> None:
    scheduled = [_job_of(s) for s in _of_type(resources, "AWS::Scheduler::Schedule").values()]
    assert sorted(scheduled) == sorted(registry)


def test_every_schedule_has_a_missed_heartbeat_alarm_at_the_jobs_overdue_threshold(
    resources: dict[str, Any], registry: dict[str, JobSpec]
) -> None:
    alarms = {
        _dimension(alarm, "Job"): alarm
        for alarm in _of_type(resources, "AWS::CloudWatch::Alarm").values()
        if alarm.get("MetricName") == "JobHeartbeatAge"
    }
    for schedule in _of_type(resources, "AWS::Scheduler::Schedule").values():
        job = _job_of(schedule)
        assert job in alarms, f"no missed-heartbeat alarm for {job}"
        alarm = alarms[job]
        assert alarm["Threshold"] == registry[job].overdue_after()
        assert alarm["TreatMissingData"] == "breaching"  # silence is an alarm too
        assert alarm["Namespace"] == "Lockgate" and _dimension(alarm, "service") == "lockgate"
        assert alarm["AlarmActions"] == [{"Ref": "AlertsTopic"}]


def test_the_scheduler_role_may_invoke_only_the_jobs_functions(resources: dict[str, Any]) -> None:
    role = resources["SchedulerInvokeRole"]["Properties"]
    statements = role["Policies"][0]["PolicyDocument"]["Statement"]
    invoke = [s for s in statements if s["Action"] == "lambda:InvokeFunction"]
    assert [s["Resource"] for s in invoke] == [[{"Fn::GetAtt": [f, "Arn"]} for f in JOBS_FUNCTIONS]]
    assert role["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] == {
        "Service": "scheduler.amazonaws.com"
    }


def test_every_schedule_expression_parses(registry: dict[str, JobSpec]) -> None:
    for spec in registry.values():
        assert ScheduleExpression.parse(spec.schedule).longest_gap() > 0


def _dimension(alarm: dict[str, Any], name: str) -> str | None:
    return next((d["Value"] for d in alarm.get("Dimensions", []) if d["Name"] == name), None)


def test_the_jobs_role_reads_only_the_link_and_model_keys_writes_no_decision_and_no_shop_data(
    resources: dict[str, Any],
) -> None:
    # As deployed on Anthropic's API (ModelProvider's default): with an AWS provider no model key.
    statements = statements_of(resources["ScheduledJobsRole"]["Properties"])
    granted = [
        (action, json.dumps(s["Resource"]))
        for s in statements
        for action in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]])
    ]
    secrets = [r for a, r in granted if a.startswith("secretsmanager:")]
    # The digest's signed links; collect-batches reads batch results with the model key; reconcile
    # asks MCP servers' reconcile tools with their credentials. No webhook secret.
    assert json.dumps({"Ref": "ApprovalLinkSecret"}) in secrets and len(secrets) == 3
    assert sum("anthropic-api-key-??????" in r for r in secrets) == 1
    assert sum("${SecretsPrefix}/mcp/*" in r for r in secrets) == 1
    assert not [r for r in secrets if "webhooks" in r]
    assert not [
        a for a, r in granted if "DecisionsTable" in r and a not in ("dynamodb:GetItem", "dynamodb:Query")
    ]
    assert not [a for a, r in granted if "Shop" in r and a != "dynamodb:GetItem"]
    assert all(r != '"*"' for a, r in granted if not a.startswith("xray:"))
