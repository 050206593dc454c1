"""collect-batches: record the answers of ended Message Batches as the runs' model steps.

Each pending item names its run and step n (an item without one is step 1: it was listed before
every-step batches existed). Each answer is recorded marked as batched (costed at the batch
discount), so the deferred event replays it through the same loop and ledger. A batch that
errored, expired or was cancelled is recorded as such and the run makes that step's call
directly. The conditional delete of the pending item claims it, so settling the spend hold and
the usage metric happen once.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from lockgate.agent.batches import PENDING_PK
from lockgate.agent.runs import Run, RunStore
from lockgate.capacity.gate import Gate
from lockgate.capacity.spend import Reservation
from lockgate.dynamo import Page, conditional_failed, read_page
from lockgate.errors import StoreUnavailable
from lockgate.jobs.contract import JobContext, JobResult
from lockgate.model.client import reply_from_message
from lockgate.model.errors import classify
from lockgate.model.price_table import PriceTable
from lockgate.model.sdk import LazySdk
from lockgate.model.usage import NoUsageMetrics, UsageMetrics
from lockgate.telemetry import Log

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


class BatchCollector:
    """The job: fetch every pending batch that has ended and record its answers into the runs."""

    def __init__(
        self,
        client_factory: Callable[[], Any],
        dynamodb: DynamoDBClient,
        table: str,
        runs: RunStore,
        *,
        prices: PriceTable,
        log: Log,
        gate: Gate | None = None,
        usage_metrics: UsageMetrics | None = None,
    ) -> None:
        self._sdk = LazySdk(client_factory)
        self._db = dynamodb
        self._table = table
        self._runs = runs
        self._prices = prices  # the answers' cost, settled on the spend holds and the usage metric
        self._log = log
        self._gate = gate
        self._usage_metrics = usage_metrics or NoUsageMetrics()

    def __call__(self, ctx: JobContext) -> JobResult:
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
        n = int(item.get("step", {"N": "1"})["N"])
        actual = 0.0
        if reply is not None:
            actual = self._prices.cost_usd(reply.model, reply.usage, item["cache_ttl"]["S"], batch=True)
            self._runs.record(run, n, "model", reply.as_dict())
        else:
            self._runs.record(run, n, "batch_result", {"outcome": outcome})
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
        if self._gate is not None and "reservation" in item:
            self._gate.settle(_reservation_from(item["reservation"]["S"]), actual)


def _by_batch(items: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for item in items:
        groups.setdefault(item["sk"]["S"].split("#", 1)[0], []).append(item)
    return groups


def _reservation_from(raw: str) -> Reservation:
    data = json.loads(raw)
    # A hold from before sharding has no shard: it was on the day's one item.
    where = int(data.get("shard", 0)), int(data.get("shards", 1))
    estimate, counters = Decimal(data["estimate_usd"]), tuple(data["counters"])
    return Reservation(data["day"], data["task"], estimate, counters, *where)
