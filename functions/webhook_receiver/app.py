"""Webhook receiver Lambda: POST /webhooks/{source} → verified, stored once, queued.

The composition root: settings, clients and the core Receiver are built once per
cold start. Deliberately imports nothing of the agent (anthropic, pydantic).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import boto3
from aws_lambda_powertools import Logger, Metrics

from lockgate.clock import SystemClock
from lockgate.config import load_config
from lockgate.errors import LockgateError
from lockgate.http import RawRequest, error_response
from lockgate.inbox.bodies import BodyStore
from lockgate.inbox.queue import InboxQueue
from lockgate.inbox.receipt import Receiver
from lockgate.inbox.store import InboxStore
from lockgate.secrets import SecretResolver
from lockgate.settings import ReceiverSettings

logger = Logger()
metrics = Metrics()
settings = ReceiverSettings.from_env(os.environ)
session = boto3.session.Session()
receiver = Receiver(
    config=load_config(Path(__file__).parent / settings.config_path),
    secrets=SecretResolver(os.environ, secretsmanager=lambda: session.client("secretsmanager")),
    inbox=InboxStore(session.client("dynamodb"), settings.inbox_table),
    queue=InboxQueue(session.client("sqs"), settings.inbox_queue_url),
    bodies=BodyStore(session.client("s3"), settings.body_bucket),
    clock=SystemClock(),
    log=logger,
    metrics=metrics,
)
# Refuse to start with a missing or empty secret: it would let anyone forge deliveries.
receiver.check_secrets()


@metrics.log_metrics
@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Answer 200 once the delivery is stored (or was already); map domain errors to replies."""
    try:
        return receiver.receive(RawRequest.from_apigw_v2(event)).to_apigw()
    except LockgateError as exc:
        return error_response(exc).to_apigw()
