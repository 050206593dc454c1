"""What the metered usage costs: per-event and fixed monthly dollars, with the assumptions stated.

``bill`` prices what ``lockgate_infra.cost.meter`` measured; ``_fixed`` reads what the stack costs
with no events from the template and the config (alarms, dashboard, metrics, secrets, schedules).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from lockgate_infra.cost.meter import LOG_BYTES_PER_EVENT, Usage
from lockgate_infra.cost.prices import PRICES, AwsPrices
from lockgate_infra.evals.shoprig import ROOT

IDLE_POLL_REQUESTS_PER_MONTH = 5 * 3 * 60 * 24 * 30  # 5 pollers, one 20 s long poll each at a time
SECONDS_PER_MONTH = 30 * 24 * 3600


FULL_CPU_MB = 1769  # Lambda's memory size with one whole vCPU: below it, CPU time stretches


@dataclass(frozen=True)
class Assumptions:
    """What cannot be measured offline."""

    call_ms: float = 8.0  # one AWS API call from Lambda, round trip
    model_seconds: float = 4.0  # one model call, as the worker waits for it
    records_per_batch: float = 1.0  # SQS records per worker invocation (1: a quiet queue)


@dataclass
class Bill:
    """Dollars per month, by line."""

    per_event: dict[str, float] = field(default_factory=dict)
    fixed: dict[str, float] = field(default_factory=dict)
    model_per_event: float = 0.0

    def total(self, events: int) -> float:
        """AWS dollars for a month of ``events``."""
        return events * sum(self.per_event.values()) + sum(self.fixed.values())


def bill(usage: Usage, assume: Assumptions = Assumptions(), prices: AwsPrices = PRICES) -> Bill:
    """Per-event and fixed monthly dollars from measured usage."""
    out = Bill(model_per_event=usage.per_event(usage.model_usd))
    gb_seconds = 0.0
    invocations = 0.0
    for name, function in usage.functions.items():
        cpu = max(0.0, function.own_seconds) * max(1.0, FULL_CPU_MB / function.memory_mb)
        waits = function.aws_calls * assume.call_ms / 1000
        requests = float(function.invocations)
        if name == "worker":
            # A batch's records run side by side (up to the function's record concurrency): its
            # invocation is billed for the longest record's waits, not their sum.
            side_by_side = max(1.0, min(assume.records_per_batch, function.concurrency))
            waits = (waits + usage.model_calls * assume.model_seconds) / side_by_side
            requests /= max(1.0, assume.records_per_batch)
        gb_seconds += (cpu + waits) * function.memory_mb / 1024
        invocations += requests
    out.per_event["Lambda compute (GB-s)"] = usage.per_event(gb_seconds) * prices.lambda_gb_second
    out.per_event["Lambda requests"] = usage.per_event(invocations) * prices.lambda_request
    out.per_event["HTTP API requests"] = usage.per_event(usage.posts) * prices.http_api_request
    writes = usage.write_units + usage.index_write_units
    out.per_event["DynamoDB writes"] = usage.per_event(writes) * prices.dynamodb_write_unit
    out.per_event["DynamoDB reads"] = usage.per_event(usage.read_units) * prices.dynamodb_read_unit
    out.per_event["SQS requests"] = usage.per_event(usage.sqs_requests) * prices.sqs_request
    out.per_event["S3 requests"] = usage.per_event(
        usage.s3_puts * prices.s3_put + usage.s3_gets * prices.s3_get
    )
    out.per_event["SES emails"] = usage.per_event(usage.emails) * prices.ses_email
    out.per_event["CloudWatch Logs"] = LOG_BYTES_PER_EVENT / 1e9 * prices.logs_ingested_gb
    out.fixed.update(_fixed(prices))
    return out


def _fixed(prices: AwsPrices) -> dict[str, float]:
    """What the stack costs each month with no events, read from the template and the config."""
    from lockgate.config import load_config
    from lockgate_infra.local.template import LocalPlan, load_template

    template = load_template(ROOT / "template.yaml")
    resources = template.get("Resources", {})
    kinds = Counter(str(r.get("Type")) for r in resources.values())
    plan = LocalPlan.from_template(template)
    worker_gb = plan.functions["AgentWorkerFunction"].memory_mb / 1024
    schedules = [s for s in plan.schedules if s.enabled]
    ticks = sum(_ticks_per_month(s.expression) for s in schedules)
    # About a second per job run on its target's memory; the weekly eval is priced at its whole
    # timeout (an upper bound: its model calls, priced apart, are what it costs).
    job_gb_seconds = sum(
        _ticks_per_month(s.expression)
        * plan.functions[s.function].memory_mb
        / 1024
        * (plan.functions[s.function].timeout if s.function == "EvalJobsFunction" else 1.0)
        for s in schedules
    )
    secrets = len(load_config(ROOT / "lockgate.toml").sources) + 2  # webhook secrets, link key, model key
    return {
        "CloudWatch alarms": kinds["AWS::CloudWatch::Alarm"] * prices.alarm_month,
        "CloudWatch dashboard": kinds["AWS::CloudWatch::Dashboard"] * prices.dashboard_month,
        "Custom metrics": _custom_metric_count() * prices.custom_metric_month,
        "Secrets Manager": secrets * prices.secret_month,
        "KMS keys": kinds["AWS::KMS::Key"] * prices.kms_key_month,
        "SnapStart cache (worker)": worker_gb * SECONDS_PER_MONTH * prices.snapstart_cache_gb_second,
        "SQS idle polling": IDLE_POLL_REQUESTS_PER_MONTH * prices.sqs_request,
        "Scheduler + scheduled jobs": ticks * (prices.scheduler_invocation + prices.lambda_request)
        + job_gb_seconds * prices.lambda_gb_second,
    }


def _ticks_per_month(expression: str) -> float:
    rate = re.fullmatch(r"rate\((\d+) (minute|minutes|hour|hours|day|days)\)", expression.strip())
    if rate:
        seconds = int(rate.group(1)) * {"minute": 60, "hour": 3600, "day": 86400}[rate.group(2).rstrip("s")]
        return SECONDS_PER_MONTH / seconds
    if expression.startswith("cron("):
        fields = expression[5:-1].split()
        weekly = fields[4] not in ("*", "?") if len(fields) > 4 else False
        return 30 / 7 * (5 if "-" in fields[4] else 1) if weekly else 30.0  # weekdays, weekly, else daily
    return 1.0


def _custom_metric_count() -> int:
    names: set[str] = set()
    for path in (ROOT / "layers" / "core" / "lockgate").rglob("*.py"):
        names.update(re.findall(r'add_metric\(\s*name="([A-Za-z_]+)"', path.read_text(encoding="utf-8")))
    return len(names)
