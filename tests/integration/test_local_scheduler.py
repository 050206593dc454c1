"""The local scheduler: the template's schedules on a compressed clock, and a scheduled task end to end."""

from __future__ import annotations

import json
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from lockgate.jobs.schedule import parse_iso
from lockgate_infra.local.model import local_model
from lockgate_infra.local.scheduler import LocalScheduler
from lockgate_infra.local.stack import LocalStack
from lockgate_infra.local.template import LocalPlan
from lockgate_infra.local.workflows import seed_workflows

ROOT = Path(__file__).resolve().parents[2]
MONDAY = parse_iso("2026-01-05T00:00:00Z")


class FakeMonotonic:
    """Real time that moves only when told to."""

    def __init__(self) -> None:
        self.value = 0.0

    def __call__(self) -> float:
        return self.value


def test_given_clock_speed_1440_then_a_days_schedules_fire_in_a_minute_each_with_its_scheduled_time() -> None:
    # Given the real template's schedules on a clock 1440 times real time, from Monday 00:00 UTC
    plan = LocalPlan.from_file(ROOT / "template.yaml")
    invoked: list[tuple[str, dict[str, Any]]] = []
    monotonic = FakeMonotonic()
    scheduler = LocalScheduler(
        plan.schedules,
        lambda function, event: invoked.append((function, event)),
        clock_speed=1440,
        start=MONDAY,
        monotonic=monotonic,
    )

    # When one real minute passes in 0.2 s ticks
    for _ in range(300):
        monotonic.value += 0.2
        scheduler.fire_due()

    # Then a whole simulated day of occurrences reached the jobs functions, once each (the eval
    # goes to the function packaged with the eval harness)
    jobs = Counter(event["job"] for _, event in invoked)
    assert {(function, event["job"] == "eval") for function, event in invoked} == {
        ("ScheduledJobsFunction", False),
        ("EvalJobsFunction", True),
    }
    assert jobs == {
        "sweep-inbox": 288,
        "escalate-approvals": 288,
        "expire-approvals": 96,
        "reconcile-operations": 96,
        "collect-batches": 144,
        "approval-digest": 1,
        "budget-report": 1,
        "eval": 1,  # Monday 03:00
        "prune": 1,
        "refund-summary": 1,  # a weekday, 06:17
    }
    summary = next(event for _, event in invoked if event["job"] == "refund-summary")
    assert summary == {"job": "refund-summary", "scheduled_time": "2026-01-05T06:17:00Z"}
    sweeps = [event["scheduled_time"] for _, event in invoked if event["job"] == "sweep-inbox"]
    assert sweeps[:2] == ["2026-01-05T00:05:00Z", "2026-01-05T00:10:00Z"] and len(set(sweeps)) == 288


def test_given_the_local_stack_when_the_refund_summary_fires_then_the_owner_gets_one_email_of_refunds(
    monkeypatch: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given the local stack with the offline demo model, the shop seeded, and two refunds yesterday
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    with local_model("demo", {}) as model, LocalStack(environment=model.environment) as stack:
        seed_workflows(stack)
        dynamodb = stack.client("dynamodb")
        payments = stack.resources["ShopPaymentsTable"]
        sunday = int(parse_iso("2026-01-04T10:00:00Z"))
        for key, order, amount, created in (
            ("refund#A-1043#20.00", "A-1043", "20.00", sunday),
            ("refund#A-2001#15.50", "A-2001", "15.50", sunday + 3600),
            ("refund#A-1042#5.00", "A-1042", "5.00", sunday - 86_400),  # Saturday: not in the summary
        ):
            dynamodb.put_item(
                TableName=payments,
                Item={
                    "idempotency_key": {"S": key},
                    "kind": {"S": "refund"},
                    "order_id": {"S": order},
                    "customer_email": {"S": "ada@example.com"},
                    "amount": {"N": str(Decimal(amount))},
                    "currency": {"S": "USD"},
                    "reason": {"S": "Customer reports the item arrived damaged"},
                    "run_id": {"S": "test"},
                    "created_at": {"N": str(created)},
                },
            )
        stack.start_pollers(wait_seconds=0)
        monkeypatch.setattr("shop.summary.LOOKBACK_DAYS", 100_000)  # the fixed dates above are in the past

        # When Scheduler fires Monday's 06:17 occurrence twice (at-least-once delivery)
        event = {"job": "refund-summary", "scheduled_time": "2026-01-05T06:17:00Z"}
        first = stack.invoke("ScheduledJobsFunction", event)
        second = stack.invoke("ScheduledJobsFunction", event)
        assert stack.drain(30)

        # Then one inbox event, one run, and one email to the owner listing Sunday's two refunds
        assert first["counts"] == {"enqueued": 1, "duplicate": 0}
        assert second["counts"] == {"enqueued": 0, "duplicate": 1}
        item = dynamodb.get_item(
            TableName=stack.resources["InboxTable"],
            Key={"pk": {"S": "schedule#refund-summary#2026-01-05T06:17:00Z"}},
        )["Item"]
        assert item["status"]["S"] == "done"
        sent = _sent_emails(stack)
        assert len(sent) == 1
        assert sent[0].destinations["ToAddresses"] == ["owner@shop.example.com"]
        assert sent[0].subject == "Refunds on 2026-01-04"
        body = sent[0].body
        assert "2 refund(s) on 2026-01-04, $35.50 in total" in body
        assert "A-1043: $20.00" in body and "A-2001: $15.50" in body and "A-1042" not in body

        # And each invocation published the job's heartbeat age (EMF, dimensions service and Job)
        beats = [
            json.loads(line)
            for line in capsys.readouterr().out.splitlines()
            if line.startswith("{") and '"JobHeartbeatAge"' in line
        ]
        assert any(b.get("Job") == "refund-summary" and b.get("service") == "lockgate" for b in beats)
        assert all(b["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["service", "Job"]] for b in beats)


def _sent_emails(stack: LocalStack) -> list[Any]:
    """What moto's SES recorded (the in-process server shares this process's backends)."""
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.ses.models import ses_backends

    return list(ses_backends[DEFAULT_ACCOUNT_ID][stack.region].sent_messages)


def test_given_the_eval_function_loaded_first_then_the_jobs_function_still_runs_every_job() -> None:
    # Given one process hosting both jobs functions, EvalJobsFunction (JOBS=eval) loaded first
    with LocalStack() as stack:
        evals = stack.load_function("EvalJobsFunction").module
        jobs = stack.load_function("ScheduledJobsFunction").module
        # Then each cold start saw its own environment only: JOBS is EvalJobsFunction's alone
        assert list(evals.jobs) == ["eval"]
        assert {"sweep-inbox", "eval", "refund-summary"} <= set(jobs.jobs)
        assert (evals.settings.timeout_seconds, jobs.settings.timeout_seconds) == (900, 300)
