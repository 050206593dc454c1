"""Agent worker Lambda: SQS batch of inbox pointers → each delivery processed under a lease.

The batch's records run side by side (``WORKER_RECORD_CONCURRENCY`` at once, lockgate.inbox.batch):
each mostly waits for the model, and one invocation waiting for ten is billed once, not ten times.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import EphemeralMetrics

from lockgate.approvals.version_checks import is_check
from lockgate.config import load_config
from lockgate.inbox.batch import QueueRecord, process_batch
from lockgate.inbox.queue import decode_pointer
from lockgate.model.usage import EmfUsageMetrics
from lockgate.restore import register_after_restore
from lockgate.runtime.deps import lambda_deps
from lockgate.runtime.worker import build_worker
from lockgate.settings import WorkerSettings
from lockgate.telemetry import SharedMetrics, expect_empty_metrics

expect_empty_metrics()  # an invocation that adds no metric is normal: no warning for it
logger = Logger()
metrics = Metrics()


settings = WorkerSettings.from_env(os.environ)
config = load_config(Path(__file__).parent / settings.config_path, settings.stage)
# Per-call dollars and tokens by task and model (its own EMF blob: its own dimensions).
deps = lambda_deps(
    os.environ,
    logger,
    SharedMetrics(metrics),  # a batch's records add metrics from several threads
    timeout_seconds=settings.timeout_seconds,
    connections=settings.record_concurrency,
    usage_metrics=lambda tasks: EmfUsageMetrics(EphemeralMetrics, tasks, frozenset(config.models)),
)
parts = build_worker(settings, config, deps, environ=os.environ)
worker = parts.worker
register_after_restore(parts.restore.after_restore)
if settings.snap_start:
    # Pre-initialised into the snapshot: the SDK's import (~2 s) is paid once at publish time,
    # not by the first invocation of every new environment. No client or key is made here.
    import anthropic  # noqa: F401


def record_handler(record: QueueRecord, lambda_context: Any) -> str:
    """One message: a pointer to a stored delivery."""
    pk = decode_pointer(record.body)
    # Every log line while handling this delivery carries its id; the run id is the same key.
    # Thread-safe keys live in this record's own context (process_batch gives each record one):
    # append_keys would be one set shared by every record running at the same time.
    logger.thread_safe_append_keys(delivery=pk, run=pk)
    return worker.process(
        pk,
        record.receipt_handle,
        remaining_seconds=lambda: lambda_context.get_remaining_time_in_millis() / 1000,
    )


@metrics.log_metrics
@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Process a batch; failed items are reported so SQS redelivers only those (never the whole batch).

    A direct invocation from the approval side asks whether an edited version would run (it reads,
    never writes): answered by ``parts.checks``.
    """
    if is_check(event) and parts.checks is not None:
        return parts.checks.answer(event)
    return process_batch(
        event,
        lambda record: record_handler(record, context),
        concurrency=settings.record_concurrency,
        log=logger,
    )
