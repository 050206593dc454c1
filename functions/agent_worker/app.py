"""Agent worker Lambda: SQS batch of inbox pointers → each delivery processed under a lease."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import boto3
from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from lockgate.clock import SystemClock
from lockgate.config import load_config
from lockgate.freshness import EntityVersions
from lockgate.inbox.bodies import BodyStore
from lockgate.inbox.queue import DeadLetters, InboxQueue, decode_pointer
from lockgate.inbox.store import InboxStore
from lockgate.processing import Leasing, Worker
from lockgate.routing import Router
from lockgate.settings import WorkerSettings
from lockgate.workflows import Setup, load_workflows

logger = Logger()
metrics = Metrics()
settings = WorkerSettings.from_env(os.environ)
config = load_config(Path(__file__).parent / settings.config_path)
session = boto3.session.Session()
dynamodb = session.client("dynamodb")
sqs = session.client("sqs")
router = Router()
load_workflows(config.workflows_package, Setup(router=router, environ=os.environ, client=session.client))
worker = Worker(
    inbox=InboxStore(dynamodb, settings.inbox_table),
    bodies=BodyStore(session.client("s3"), settings.body_bucket),
    queue=InboxQueue(sqs, settings.inbox_queue_url),
    dead_letters=DeadLetters(sqs, settings.inbox_dlq_url),
    router=router,
    versions=EntityVersions(dynamodb, settings.state_table, SystemClock()),
    settings=config.inbox,
    leasing=Leasing.for_timeout(settings.timeout_seconds),
    clock=SystemClock(),
    log=logger,
    metrics=metrics,
)
# An all-failed batch is normal (every delivery backing off): report it, don't error the invocation.
processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)


def record_handler(record: SQSRecord, lambda_context: Any) -> str:
    """One message: a pointer to a stored delivery."""
    return worker.process(
        decode_pointer(record.body),
        record.receipt_handle,
        remaining_seconds=lambda: lambda_context.get_remaining_time_in_millis() / 1000,
    )


@metrics.log_metrics
@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Process a batch; failed items are reported so SQS redelivers only those."""
    return dict(
        process_partial_response(
            event=event, record_handler=record_handler, processor=processor, context=context
        )
    )
