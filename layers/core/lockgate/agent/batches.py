"""Message Batches (half price) for scheduled, non-urgent tasks.

A task with ``batch=True`` does not wait for its first model call: the loop submits it as a
one-request batch, records ``batch`` on the run (so a retry never submits again), lists it under
``batch#pending`` and defers the event. ``collect_batches`` — a scheduled job — fetches ended
batches and records each answer as the run's first model step, marked as batched (costed at the
batch discount), so the deferred event replays it through the same loop and ledger. A batch that
errored, expired or was cancelled is recorded as such and the run makes the call directly.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import replace
from decimal import Decimal
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from lockgate.agent.runs import Run, RunStore
from lockgate.capacity.spend import Reservation, SpendCaps, input_tokens_upper_bound
from lockgate.clock import Clock
from lockgate.dynamo import Page, conditional_failed, read_page
from lockgate.errors import Deferred, StoreUnavailable
from lockgate.jobs.contract import JobContext, JobResult
from lockgate.model.client import ModelRequest, reply_from_message
from lockgate.model.errors import classify
from lockgate.model.pricing import cost_usd, estimate_usd
from lockgate.model.usage import NoUsageMetrics, UsageMetrics
from lockgate.telemetry import Log, Metrics

# How long the event waits before it looks for the answer again. Each look is a worker attempt,
# so with the inbox's 5 attempts an event waits about 4 hours; most batches end within one.
RECHECK_SECONDS = 3600
PENDING_PK = "batch#pending"
PENDING_TTL_SECONDS = 30 * 86_400  # batch results are kept for 29 days


class BatchWaiting(Deferred):
    """The run's first call is in a Message Batch: come back after the collect job has run."""


class Batches:
    """Submits first calls as batches and collects their answers into the runs."""

    def __init__(
        self,
        client_factory: Callable[[], Any],
        dynamodb: Any,
        table: str,
        runs: RunStore,
        clock: Clock,
        *,
        log: Log,
        metrics: Metrics,
        spend: SpendCaps | None = None,
        usage_metrics: UsageMetrics | None = None,
    ) -> None:
        self._factory = client_factory
        self._client: Any = None
        self._db = dynamodb
        self._table = table
        self._runs = runs
        self._clock = clock
        self._log = log
        self._metrics = metrics
        self._spend = spend
        self._usage_metrics = usage_metrics or NoUsageMetrics()

    def first_call(self, task: str, run: Run, request: ModelRequest) -> None:
        """Submit once, then wait (BatchWaiting); returns only when the batch failed: call directly."""
        submitted = run.step(1, "batch")
        if submitted is None:
            submitted = self._submit(task, run, request)
        elif run.step(1, "batch_result") is not None:
            return
        raise BatchWaiting(f"waiting for message batch {submitted.data['batch_id']}", RECHECK_SECONDS)

    def collect_batches(self, ctx: JobContext) -> JobResult:
        """The scheduled job: record the answers of every ended batch; resumable by cursor."""
        counts = {"collected": 0, "failed": 0, "waiting": 0}
        start = dict(ctx.cursor) if ctx.cursor else None
        while True:
            page, start = self._pending_page(start)
            for batch_id, items in _by_batch(page).items():
                if ctx.should_stop():
                    return JobResult(
                        done=False, cursor={"pk": items[0]["pk"], "sk": items[0]["sk"]}, counts=counts
                    )
                self._collect_one(batch_id, items, counts)
            if not start:
                return JobResult(done=True, counts=counts)

    # -- submitting -----------------------------------------------------------------------

    def _submit(self, task: str, run: Run, request: ModelRequest) -> Any:
        reservation = None
        if self._spend is not None:
            prompt = input_tokens_upper_bound(request.system, request.tools, request.messages)
            estimate = estimate_usd(
                request.model, prompt, request.max_tokens, cache_ttl=request.cache_ttl, batch=True
            )
            reservation = self._spend.reserve(task, estimate)
        custom_id = "run-" + hashlib.sha256(run.run_id.encode()).hexdigest()[:40]
        try:
            batch = self._sdk().messages.batches.create(
                requests=[{"custom_id": custom_id, "params": request.to_params()}]
            )
        except Exception as exc:  # noqa: BLE001 - every SDK failure is classified
            if self._spend is not None and reservation is not None:
                self._spend.settle(reservation, 0.0)
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
            item["reservation"] = {"S": _reservation_json(reservation)}
        try:
            self._db.put_item(
                TableName=self._table, Item=item, ConditionExpression="attribute_not_exists(pk)"
            )
        except (ClientError, BotoCoreError) as exc:
            raise StoreUnavailable(f"could not list message batch {data['batch_id']}") from exc

    # -- collecting -----------------------------------------------------------------------

    def _pending_page(self, start: dict[str, Any] | None) -> Page:
        return read_page(
            self._db.query,
            start,
            TableName=self._table,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": {"S": PENDING_PK}},
        )

    def _collect_one(self, batch_id: str, items: list[dict[str, Any]], counts: dict[str, int]) -> None:
        try:
            batch = self._sdk().messages.batches.retrieve(batch_id)
            lines = (
                list(self._sdk().messages.batches.results(batch_id))
                if batch.processing_status == "ended"
                else None
            )
        except Exception as exc:  # noqa: BLE001 - classified; the batch is tried again on the next run
            self._log.warning(
                "message batch not collected", extra={"batch": batch_id, "kind": classify(exc).kind}
            )
            lines = None
        if lines is None:
            counts["waiting"] += len(items)
            return
        wanted = {item["sk"]["S"].split("#", 1)[1]: item for item in items}
        for line in lines:
            item = wanted.pop(line.custom_id, None)
            if item is not None:
                counts["collected" if self._apply(item, line.result) else "failed"] += 1
        for item in wanted.values():  # an ended batch without our line: treat as failed
            self._finish(item, None, "missing")
            counts["failed"] += 1

    def _apply(self, item: dict[str, Any], result: Any) -> bool:
        if result.type != "succeeded":
            self._finish(item, None, str(result.type))
            return False
        reply = replace(reply_from_message(result.message), batch=True)
        self._finish(item, reply, "succeeded")
        return True

    def _finish(self, item: dict[str, Any], reply: Any, outcome: str) -> None:
        run = Run(run_id=item["run_id"]["S"], task=item["task"]["S"], delivery=item["delivery"]["S"])
        actual = 0.0
        if reply is not None:
            actual = cost_usd(reply.model, reply.usage, item["cache_ttl"]["S"], batch=True)
            self._runs.record(run, 1, "model", reply.as_dict())
        else:
            self._runs.record(run, 1, "batch_result", {"outcome": outcome})
        try:  # the conditional delete claims the item: what follows happens once
            self._db.delete_item(
                TableName=self._table,
                Key={"pk": item["pk"], "sk": item["sk"]},
                ConditionExpression="attribute_exists(pk)",
            )
        except ClientError as exc:
            if not conditional_failed(exc):
                raise StoreUnavailable(type(exc).__name__) from exc
            return  # another collector finished it
        except BotoCoreError as exc:
            raise StoreUnavailable(type(exc).__name__) from exc
        if reply is not None:
            self._usage_metrics.model_call(run.task, reply.model, reply.usage, actual, cache_hit=False)
        if self._spend is not None and "reservation" in item:
            self._spend.settle(_reservation_from(item["reservation"]["S"]), actual)

    def _sdk(self) -> Any:
        if self._client is None:
            self._client = self._factory()
        return self._client


def _by_batch(items: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for item in items:
        groups.setdefault(item["sk"]["S"].split("#", 1)[0], []).append(item)
    return groups


def _reservation_json(reservation: Reservation) -> str:
    return json.dumps(
        {
            "day": reservation.day,
            "task": reservation.task,
            "estimate_usd": str(reservation.estimate_usd),
            "counters": list(reservation.counters),
        }
    )


def _reservation_from(raw: str) -> Reservation:
    data = json.loads(raw)
    return Reservation(data["day"], data["task"], Decimal(data["estimate_usd"]), tuple(data["counters"]))
