"""Webhook receiver Lambda: POST /webhooks/{source} → verified, stored once, queued.

Settings and clients are read once per cold start; ``lockgate.runtime.receiver`` builds the
Receiver from them. Deliberately imports nothing of the agent (anthropic, pydantic), and reads
only the config sections it uses (``[sources]``, ``[inbox]``): its import time is a benchmark.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from aws_lambda_powertools import Logger, Metrics

from lockgate.config import load_receipt_config
from lockgate.errors import LockgateError
from lockgate.http import RawRequest, error_response
from lockgate.runtime.deps import lambda_deps
from lockgate.runtime.receiver import build_receiver
from lockgate.settings import ReceiverSettings
from lockgate.telemetry import expect_empty_metrics

expect_empty_metrics()  # an invocation that adds no metric is normal: no warning for it
logger = Logger()
metrics = Metrics()
settings = ReceiverSettings.from_env(os.environ)
receiver = build_receiver(
    settings,
    load_receipt_config(Path(__file__).parent / settings.config_path, settings.stage),
    lambda_deps(os.environ, logger, metrics, timeout_seconds=settings.timeout_seconds),
)
# Read every source's secret once, up front. A source whose secret is missing, empty or unusable
# fails closed on its own (503, logged, metric SecretUnavailable) and is asked for again on later
# deliveries; the other sources keep working.
receiver.check_secrets()


@metrics.log_metrics
@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Answer 200 once the delivery is stored (or was already); map domain errors to replies."""
    try:
        return receiver.receive(RawRequest.from_apigw_v2(event)).to_apigw()
    except LockgateError as exc:
        return error_response(exc).to_apigw()
