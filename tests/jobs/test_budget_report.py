"""budget-report: yesterday's spend from the daily rollup, against the caps, as metrics."""

from __future__ import annotations

from lockgate.clock import FixedClock
from lockgate.config import BudgetConfig
from lockgate.jobs.builtin.budget_report import BudgetReport
from lockgate.model.client import Usage
from lockgate.model.usage import ModelTotals, UsageRollup
from lockgate.telemetry import CountingMetrics
from tests.jobs.conftest import context
from tests.support import LOG, Aws


def spent(aws: Aws, clock: FixedClock, run_id: str, task: str, usd: float) -> None:
    totals = ModelTotals()
    totals.add(Usage(input_tokens=1000, output_tokens=100), usd)
    rollup = UsageRollup(aws.client("dynamodb"), aws.state_table, clock, log=LOG, metrics=CountingMetrics())
    assert rollup.add_run(run_id, task, {"claude-sonnet-5-5": totals})


def test_given_yesterdays_runs_when_reported_then_dollars_and_near_cap_scopes_are_counted(
    aws: Aws, clock: FixedClock
) -> None:
    # Given runs recorded on 2026-01-01 (the test clock's day): $8.50 for support-inbox, $0.50 for triage
    spent(aws, clock, "r1", "support-inbox", 5.0)
    spent(aws, clock, "r2", "support-inbox", 3.5)
    spent(aws, clock, "r3", "triage", 0.5)
    job = BudgetReport(
        dynamodb=aws.client("dynamodb"),
        state_table=aws.state_table,
        budget=BudgetConfig(daily_usd=20.0, tasks={"support-inbox": 10.0, "triage": 5.0}),
    )
    metrics = CountingMetrics()
    # When the report runs the next morning
    result = job(context(clock, metrics, scheduled_time="2026-01-02T00:05:00Z"))
    # Then it counted $9.00 over two tasks, and support-inbox (85% of its $10 cap) as near its cap
    assert result.done and result.counts == {"tasks": 2, "cents": 900, "near_cap": 1}
    assert metrics.totals == {"BudgetDayUsd": 9.0, "BudgetDayNearCap": 1}


def test_given_a_quiet_day_then_the_report_is_zero_not_an_error(aws: Aws, clock: FixedClock) -> None:
    job = BudgetReport(dynamodb=aws.client("dynamodb"), state_table=aws.state_table, budget=BudgetConfig())
    metrics = CountingMetrics()
    result = job(context(clock, metrics, scheduled_time="2026-03-01T00:05:00Z"))
    assert result.counts == {"tasks": 0, "cents": 0, "near_cap": 0}
    assert metrics.totals == {"BudgetDayUsd": 0.0, "BudgetDayNearCap": 0}
