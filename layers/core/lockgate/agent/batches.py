"""Message Batches (half price) for scheduled, non-urgent tasks: submitting the first call.

A task with ``batch=True`` does not wait for its first model call: the loop submits it as a
one-request batch, records ``batch`` on the run (so a retry never submits again), lists it under
``batch#pending`` and defers the event. The ``collect-batches`` job
(``lockgate.jobs.builtin.collect_batches``) records each answer as the run's first model step,
so the deferred event replays it through the same loop and ledger.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from lockgate.agent.runs import Run, Runs
from lockgate.capacity.gate import Gate
from lockgate.capacity.spend import Reservation, input_tokens_upper_bound
from lockgate.clock import Clock
from lockgate.errors import Deferred, StoreUnavailable
from lockgate.model.client import ModelRequest
from lockgate.model.errors import classify
from lockgate.model.pricing import estimate_usd
from lockgate.model.sdk import LazySdk
from lockgate.telemetry import Log, Metrics

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

# How long the event waits before it looks for the answer again. Each look is a worker attempt,
# so with the inbox's 5 attempts an event waits about 4 hours; most batches end within one.
RECHECK_SECONDS = 3600
PENDING_PK = "batch#pending"
PENDING_TTL_SECONDS = 30 * 86_400  # batch results are kept for 29 days


class BatchWaiting(Deferred):
    """The run's first call is in a Message Batch: come back after the collect job has run."""


class Batches:
    """Submits a run's first model call as a one-request Message Batch, once."""

    def __init__(
        self,
        client_factory: Callable[[], Any],
        dynamodb: DynamoDBClient,
        table: str,
        runs: Runs,
        clock: Clock,
        *,
        log: Log,
        metrics: Metrics,
        gate: Gate | None = None,
    ) -> None:
        self._sdk = LazySdk(client_factory)
        self._db = dynamodb
        self._table = table
        self._runs = runs
        self._clock = clock
        self._log = log
        self._metrics = metrics
        self._gate = gate

    def first_call(self, task: str, run: Run, request: ModelRequest) -> None:
        """Submit once, then wait (BatchWaiting); returns only when the batch failed: call directly."""
        submitted = run.step(1, "batch")
        if submitted is None:
            submitted = self._submit(task, run, request)
        elif run.step(1, "batch_result") is not None:
            return
        raise BatchWaiting(f"waiting for message batch {submitted.data['batch_id']}", RECHECK_SECONDS)

    # -- submitting -----------------------------------------------------------------------

    def _submit(self, task: str, run: Run, request: ModelRequest) -> Any:
        reservation = None
        if self._gate is not None:  # the batch price held on the day's caps; no rate bucket to take
            prompt = input_tokens_upper_bound(request.system, request.tools, request.messages)
            estimate = estimate_usd(
                request.model, prompt, request.max_tokens, cache_ttl=request.cache_ttl, batch=True
            )
            reservation = self._gate.admit(task, [], estimate, 0, self._clock.now())
        custom_id = "run-" + hashlib.sha256(run.run_id.encode()).hexdigest()[:40]
        try:
            batch = self._sdk().messages.batches.create(
                requests=[{"custom_id": custom_id, "params": request.to_params()}]
            )
        except Exception as exc:  # noqa: BLE001 - every SDK failure is classified
            if self._gate is not None:
                self._gate.settle(reservation, 0.0)
            raise classify(exc) from exc
        data = {"batch_id": batch.id, "custom_id": custom_id, "task": task, "cache_ttl": request.cache_ttl}
        step = self._runs.record(run, 1, "batch", data)
        if step.data["batch_id"] != batch.id:
            # Another attempt submitted first; its batch is the one collected. Ours is orphaned.
            self._log.warning("duplicate message batch", extra={"run": run.run_id, "batch": batch.id})
            return step
        self._put_pending(run, data, reservation)
        self._metrics.add_metric(name="BatchSubmitted", unit="Count", value=1)
        return step

    def _put_pending(self, run: Run, data: dict[str, Any], reservation: Reservation | None) -> None:
        now = int(self._clock.now())
        item = {
            "pk": {"S": PENDING_PK},
            "sk": {"S": f"{data['batch_id']}#{data['custom_id']}"},
            "run_id": {"S": run.run_id},
            "task": {"S": data["task"]},
            "delivery": {"S": run.delivery},
            "cache_ttl": {"S": data["cache_ttl"]},
            "submitted_at": {"N": str(now)},
            "ttl": {"N": str(now + PENDING_TTL_SECONDS)},
        }
        if reservation is not None:
            item["reservation"] = {"S": reservation_json(reservation)}
        try:
            self._db.put_item(
                TableName=self._table, Item=item, ConditionExpression="attribute_not_exists(pk)"
            )
        except (ClientError, BotoCoreError) as exc:
            raise StoreUnavailable(f"could not list message batch {data['batch_id']}") from exc


def reservation_json(reservation: Reservation) -> str:
    return json.dumps(
        {
            "day": reservation.day,
            "task": reservation.task,
            "estimate_usd": str(reservation.estimate_usd),
            "counters": list(reservation.counters),
        }
    )
