"""Message Batches (half price) for scheduled, non-urgent tasks: submitting a run's model steps.

A task with ``batch=True`` (its first step) or ``batch="every"`` (every step) does not wait for
that model call: the loop submits it as a one-request batch, records ``batch`` step n on the run
(so a retry never submits again), lists it under ``batch#pending`` with n and defers the event.
The ``collect-batches`` job (``lockgate.jobs.builtin.collect_batches``) records each answer as the
run's model step n, so the deferred event replays it through the same loop and ledger.
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
from lockgate.model.price_table import PriceTable
from lockgate.model.sdk import LazySdk
from lockgate.telemetry import Log, Metrics

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

# How long the event waits before it looks for the answer again (parked in the inbox table, so the
# sweep re-queues it). A look is not an attempt: the wait is bounded by the worker's defer limit,
# counted from when the delivery arrived. Most batches end within the hour.
RECHECK_SECONDS = 3600
PENDING_PK = "batch#pending"
PENDING_TTL_SECONDS = 30 * 86_400  # batch results are kept for 29 days


class BatchWaiting(Deferred):
    """A run's model step is in a Message Batch: come back after the collect job has run."""


class Batches:
    """Submits a run's model step as a one-request Message Batch, once per step."""

    def __init__(
        self,
        client_factory: Callable[[], Any],
        dynamodb: DynamoDBClient,
        table: str,
        runs: Runs,
        clock: Clock,
        *,
        prices: PriceTable,
        log: Log,
        metrics: Metrics,
        gate: Gate | None = None,
    ) -> None:
        self._sdk = LazySdk(client_factory)
        self._prices = prices
        self._db = dynamodb
        self._table = table
        self._runs = runs
        self._clock = clock
        self._log = log
        self._metrics = metrics
        self._gate = gate

    def call(self, task: str, run: Run, n: int, request: ModelRequest) -> None:
        """Submit step ``n`` once, then wait (BatchWaiting); returns if its batch failed (call directly)."""
        submitted = run.step(n, "batch")  # the guard: a recorded submission is never made again
        if submitted is None:
            submitted = self._submit(task, run, n, request)
        elif run.step(n, "batch_result") is not None:
            return
        raise BatchWaiting(
            f"waiting for message batch {submitted.data['batch_id']} (step {n})", RECHECK_SECONDS
        )

    # -- submitting -----------------------------------------------------------------------

    def _submit(self, task: str, run: Run, n: int, request: ModelRequest) -> Any:
        reservation = None
        if self._gate is not None:  # the batch price held on the day's caps; no rate bucket to take
            prompt = input_tokens_upper_bound(request.system, request.tools, request.messages)
            estimate = self._prices.estimate_usd(
                request.model, prompt, request.max_tokens, cache_ttl=request.cache_ttl, batch=True
            )
            reservation = self._gate.admit(task, [], estimate, 0, self._clock.now())
        custom_id = step_custom_id(run.run_id, n)
        try:
            batch = self._sdk().messages.batches.create(
                requests=[{"custom_id": custom_id, "params": request.to_params()}]
            )
        except Exception as exc:  # noqa: BLE001 - every SDK failure is classified
            if self._gate is not None:
                self._gate.settle(reservation, 0.0)
            raise classify(exc) from exc
        data = {"batch_id": batch.id, "custom_id": custom_id, "task": task, "cache_ttl": request.cache_ttl}
        step = self._runs.record(run, n, "batch", data)
        if step.data["batch_id"] != batch.id:
            # Another attempt submitted first; its batch is the one collected. Ours is orphaned.
            self._log.warning("duplicate message batch", extra={"run": run.run_id, "batch": batch.id})
            return step
        self._put_pending(run, n, data, reservation)
        self._metrics.add_metric(name="BatchSubmitted", unit="Count", value=1)
        return step

    def _put_pending(self, run: Run, n: int, data: dict[str, Any], reservation: Reservation | None) -> None:
        now = int(self._clock.now())
        item = {
            "pk": {"S": PENDING_PK},
            "sk": {"S": f"{data['batch_id']}#{data['custom_id']}"},
            "run_id": {"S": run.run_id},
            "task": {"S": data["task"]},
            "delivery": {"S": run.delivery},
            "cache_ttl": {"S": data["cache_ttl"]},
            "step": {"N": str(n)},  # the collector reads a missing step as 1 (items from before)
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


def step_custom_id(run_id: str, n: int) -> str:
    """The request's id in its batch (at most 64 characters); step 1 keeps the id it always had."""
    base = "run-" + hashlib.sha256(run_id.encode()).hexdigest()[:40]
    return base if n == 1 else f"{base}-s{n}"


def reservation_json(reservation: Reservation) -> str:
    return json.dumps(
        {
            "day": reservation.day,
            "task": reservation.task,
            "estimate_usd": str(reservation.estimate_usd),
            "counters": list(reservation.counters),
            "shard": reservation.shard,  # settled on the shard it was held on
            "shards": reservation.shards,
        }
    )
