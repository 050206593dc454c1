"""``budget-report``: yesterday's model spend against the daily caps, as metrics and one log line.

Reads the daily usage rollup the worker writes when each run finishes (``usage#<day>``), so the
report costs one query however many runs there were. Per task and overall it emits the dollars
(``BudgetDayUsd``) and flags a cap that was 80% used (``BudgetDayNearCap``, alarmed like the live
``SpendNearCap``): a day that ran close to its cap is worth raising the cap or looking at why.
The day reported is the one before the scheduled time, so a late or repeated run reports the
same day again (harmless: it writes nothing).
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from decimal import Decimal
from typing import TYPE_CHECKING

from lockgate.config import BudgetConfig
from lockgate.jobs.contract import JobContext, JobResult
from lockgate.model.usage import read_day

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

NAME = "budget-report"
NEAR = Decimal("0.8")


class BudgetReport:
    """The ``budget-report`` job."""

    def __init__(self, *, dynamodb: DynamoDBClient, state_table: str, budget: BudgetConfig) -> None:
        self._db = dynamodb
        self._table = state_table
        self._budget = budget

    def __call__(self, ctx: JobContext) -> JobResult:
        """Report the UTC day before the scheduled time."""
        day = (
            dt.datetime.fromisoformat(ctx.scheduled_time.replace("Z", "+00:00")) - dt.timedelta(days=1)
        ).date()
        rows = read_day(self._db, self._table, day.isoformat())
        by_task: dict[str, Decimal] = defaultdict(Decimal)
        for row in rows:
            by_task[row["task"]] += Decimal(row.get("usd", 0))
        total = sum(by_task.values(), Decimal(0))
        near = [scope for scope, spent, cap in self._scopes(by_task, total) if cap and spent >= NEAR * cap]
        ctx.metrics.add_metric(name="BudgetDayUsd", unit="None", value=float(total))
        ctx.metrics.add_metric(name="BudgetDayNearCap", unit="Count", value=len(near))
        ctx.log.info(
            "budget report",
            extra={
                "day": day.isoformat(),
                "total_usd": str(total.quantize(Decimal("0.0001"))),
                "cap_usd": self._budget.daily_usd,
                "tasks": {
                    task: str(usd.quantize(Decimal("0.0001"))) for task, usd in sorted(by_task.items())
                },
                "near_cap": near,
            },
        )
        return JobResult(counts={"tasks": len(by_task), "cents": int(total * 100), "near_cap": len(near)})

    def _scopes(
        self, by_task: dict[str, Decimal], total: Decimal
    ) -> list[tuple[str, Decimal, Decimal | None]]:
        caps = [("global", total, _dec(self._budget.daily_usd))]
        caps += [
            (f"task:{task}", by_task.get(task, Decimal(0)), _dec(cap))
            for task, cap in self._budget.tasks.items()
        ]
        return caps


def _dec(value: float | None) -> Decimal | None:
    return None if value is None else Decimal(str(value))
