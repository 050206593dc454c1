"""AWS list prices used by ``lockgate cost`` and the approvals benchmark, in one dated place.

us-east-1, on-demand, arm64, free tiers left out. Checked against the services' pricing pages
(aws.amazon.com/<service>/pricing) on the date below; check them again before relying on them.
"""

from __future__ import annotations

from dataclasses import dataclass

PRICES_CHECKED = "2026-11-29"
REGION = "us-east-1"


@dataclass(frozen=True)
class AwsPrices:
    """Dollars per unit."""

    lambda_gb_second: float = 0.0000133334  # arm64
    lambda_request: float = 0.20 / 1e6
    snapstart_cache_gb_second: float = 0.0000015046  # Python SnapStart: cache held for each published version
    snapstart_restore_gb: float = 0.0001397998  # per GB restored (a new execution environment)
    http_api_request: float = 1.00 / 1e6
    dynamodb_write_unit: float = 0.625 / 1e6  # on-demand WRU (1 KB)
    dynamodb_read_unit: float = 0.125 / 1e6  # on-demand RRU (4 KB strongly consistent)
    sqs_request: float = 0.40 / 1e6  # standard queue, per 64 KB chunk
    s3_put: float = 0.005 / 1e3
    s3_get: float = 0.0004 / 1e3
    ses_email: float = 0.10 / 1e3
    scheduler_invocation: float = 1.00 / 1e6  # EventBridge Scheduler, after 14 million free
    logs_ingested_gb: float = 0.50
    custom_metric_month: float = 0.30
    alarm_month: float = 0.10
    dashboard_month: float = 3.00
    secret_month: float = 0.40
    secrets_api_call: float = 0.05 / 1e4
    kms_key_month: float = 1.00
    step_functions_transition: float = 0.025 / 1e3  # Standard workflows


PRICES = AwsPrices()
