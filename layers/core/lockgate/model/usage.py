"""What model calls cost, per task and model: a daily rollup in the State table and EMF metrics.

The rollup is written once per run, when it finishes: one plain atomic ``ADD`` of the run's
totals, every model it used, to the task's row ``usage#YYYY-MM-DD`` / ``rollup#TASK`` (numbers
named ``MODEL|field``; rows from before, one per task and model, still read): one call, one write
unit. "Once" is decided by the run's own finish, a conditional transition from ``running``: a
replayed finish (a redelivery after a crash) adds nothing. The price of the plain write: a crash
between the finish and the ADD leaves that run out of the day's report (an under-count of the
report only; the run's own totals are right), where a transaction with a marker would have cost
six write units per run. Sharded (``[capacity] shards``, ``lockgate.shards``), a run adds to
the shard its id hashes to (``usage#YYYY-MM-DD#s<i>``), so no key takes every run's write; a day
is read with one Query per shard and the unsharded key (rows from before sharding), 17 small
Queries with the default 16 shards, and a task's rows are summed across them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Protocol

from botocore.exceptions import BotoCoreError, ClientError

from lockgate.clock import Clock
from lockgate.dynamo import read_all
from lockgate.model.client import Usage
from lockgate.model.pricing import PRICES, matching_name
from lockgate.shards import DEFAULT_SHARDS, every_shard, shard_of, sharded
from lockgate.telemetry import Log, Metrics

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

TTL_SECONDS = 400 * 86_400  # a year of history, and a bit
# The run's totals and the day's rollup keep token totals, not the split of cache writes by
# lifetime: the dollars beside them are already priced from each call's split (kept on its step).
# Measured: the split in every total was one more DynamoDB write unit per example event.
SPLIT_FIELDS = ("cache_creation_5m_input_tokens",)
TOKEN_FIELDS = tuple(name for name in Usage().as_dict() if name not in SPLIT_FIELDS)
OTHER_MODEL = "other"
SEP = "|"  # between a model id and a field name in a task's rollup row


@dataclass
class ModelTotals:
    """One model's share of a run: calls, response-cache hits, batch calls, tokens and dollars."""

    calls: int = 0
    cache_hits: int = 0
    batched: int = 0
    usd: float = 0.0
    tokens: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TOKEN_FIELDS, 0))

    def add(self, usage: Usage, usd: float, *, calls: int = 1, cache_hits: int = 0, batched: int = 0) -> None:
        """Count calls (one by default) with their summed usage and cost."""
        self.calls += calls
        self.cache_hits += cache_hits
        self.batched += batched
        self.usd = round(self.usd + usd, 6)
        counted = usage.as_dict()
        for key in TOKEN_FIELDS:
            self.tokens[key] += counted[key]

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "calls": self.calls,
            "cache_hits": self.cache_hits,
            "batched": self.batched,
            "usd": self.usd,
            **self.tokens,
        }


def metric_model(model: str, configured: frozenset[str] = frozenset()) -> str:
    """A model id as a metric dimension: a published or ``[models]`` name, else "other" (bounded)."""
    return matching_name([*PRICES, *configured], model) or OTHER_MODEL


class UsageMetrics(Protocol):
    """Per-call cost metrics with task and model dimensions."""

    def model_call(self, task: str, model: str, usage: Usage, usd: float, *, cache_hit: bool) -> None:
        """Record one call."""


class NoUsageMetrics:
    """Per-call metrics switched off (tests, the local stack keep the run totals only)."""

    def model_call(self, task: str, model: str, usage: Usage, usd: float, *, cache_hit: bool) -> None:
        """Nothing."""


class EmfUsageMetrics:
    """One EMF blob per call (Powertools EphemeralMetrics): dollars and tokens by task and model."""

    def __init__(
        self, make_metrics: Callable[[], Any], tasks: frozenset[str], models: frozenset[str] = frozenset()
    ) -> None:
        self._make = make_metrics  # e.g. lambda: EphemeralMetrics(namespace="Lockgate")
        self._tasks = tasks  # configured task names: anything else is reported as "other"
        self._models = models  # lockgate.toml's [models] ids, named like the published ones

    def model_call(self, task: str, model: str, usage: Usage, usd: float, *, cache_hit: bool) -> None:
        """Emit the call's metrics (flushed at once: each call has its own dimensions)."""
        metrics = self._make()
        metrics.add_dimension(name="task", value=task if task in self._tasks else OTHER_MODEL)
        metrics.add_dimension(name="model", value=metric_model(model, self._models))
        metrics.add_metric(name="ModelCostUSD", unit="None", value=usd)
        metrics.add_metric(name="InputTokens", unit="Count", value=usage.input_tokens)
        metrics.add_metric(name="OutputTokens", unit="Count", value=usage.output_tokens)
        metrics.add_metric(name="CacheReadTokens", unit="Count", value=usage.cache_read_input_tokens)
        metrics.add_metric(name="CacheWriteTokens", unit="Count", value=usage.cache_creation_input_tokens)
        metrics.add_metric(name="ResponseCacheHits", unit="Count", value=int(cache_hit))
        metrics.flush_metrics()


class UsageRollup:
    """Adds each finished run's per-model totals to the day's rollup, once."""

    def __init__(
        self,
        dynamodb: DynamoDBClient,
        table: str,
        clock: Clock,
        *,
        log: Log,
        metrics: Metrics,
        shards: int = 1,
    ) -> None:
        self._db = dynamodb
        self._table = table
        self._clock = clock
        self._log = log
        self._metrics = metrics
        self._shards = max(1, shards)

    def add_run(self, run_id: str, task: str, by_model: Mapping[str, ModelTotals]) -> bool:
        """Add the run's totals to the day's row for its task: one plain ADD, every model in it.

        Called once per run: the caller adds only after the finish that ended the run. False when
        there was nothing to add or the write failed (counted; the report under-counts).
        """
        if not by_model:
            return False
        now = int(self._clock.now())
        names, values, adds = {"#ttl": "ttl"}, {":ttl": {"N": str(now + TTL_SECONDS)}}, []
        for m, (model, totals) in enumerate(by_model.items()):
            numbers = {**totals.as_dict(), "usd": Decimal(f"{totals.usd:.6f}"), "runs": 1}
            for f, (field_name, value) in enumerate(numbers.items()):
                names[f"#m{m}f{f}"] = f"{model}{SEP}{field_name}"
                values[f":m{m}f{f}"] = {"N": str(value)}
                adds.append(f"#m{m}f{f} :m{m}f{f}")
        try:
            self._db.update_item(
                TableName=self._table,
                Key=_key(day_of(now), f"rollup#{task}", shard_of(run_id, self._shards), self._shards),
                UpdateExpression=f"ADD {', '.join(adds)} SET #ttl = :ttl",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
            )
        except (ClientError, BotoCoreError) as exc:
            self._failed(run_id, type(exc).__name__)
            return False
        return True

    def _failed(self, run_id: str, error: str) -> None:
        # The run's own totals stay right; only the daily report under-counts. Say so.
        self._metrics.add_metric(name="UsageRollupFailed", unit="Count", value=1)
        self._log.error("usage rollup failed", extra={"run": run_id, "error": error})


def read_day(
    dynamodb: DynamoDBClient, table: str, day: str, shards: int = DEFAULT_SHARDS
) -> list[dict[str, Any]]:
    """The rollup rows of one UTC day: task, model and the numbers summed over every shard.

    Reads the unsharded key and ``max(shards, DEFAULT_SHARDS)`` shards: one Query each.
    """
    merged: dict[tuple[str, str], dict[str, Any]] = {}
    unsharded = f"usage#{day}"
    pks = [unsharded, *every_shard(unsharded, max(shards, DEFAULT_SHARDS, 2))]
    for pk in pks:
        for item in read_all(
            dynamodb.query,
            TableName=table,
            KeyConditionExpression="pk = :pk AND begins_with(sk, :rollup)",
            ExpressionAttributeValues={":pk": {"S": pk}, ":rollup": {"S": "rollup#"}},
        ):
            for row in _rows(day, item):
                into = merged.setdefault((row["task"], row["model"]), {"day": day})
                for name, value in row.items():
                    into[name] = into.get(name, 0) + value if isinstance(value, Decimal) else value
    return list(merged.values())


def _rows(day: str, item: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per task and model: a task's row holds ``MODEL|field`` numbers for each of its models.

    Rows written before that (one item per task and model, ``rollup#TASK#MODEL``) read as they are.
    """
    numbers = {k: Decimal(v["N"]) for k, v in item.items() if "N" in v and k != "ttl"}
    rest = item["sk"]["S"].removeprefix("rollup#")
    if not any(SEP in k for k in numbers):
        task, model = rest.rsplit("#", 1)
        return [{"day": day, "task": task, "model": model, **numbers}]
    by_model: dict[str, dict[str, Decimal]] = {}
    for name, value in numbers.items():
        model, _, field_name = name.rpartition(SEP)
        by_model.setdefault(model, {})[field_name] = value
    return [{"day": day, "task": rest, "model": model, **fields} for model, fields in by_model.items()]


def day_of(epoch: float) -> str:
    """The UTC date of an epoch time, YYYY-MM-DD."""
    return time.strftime("%Y-%m-%d", time.gmtime(epoch))


def _key(day: str, sk: str, shard: int, shards: int) -> dict[str, Any]:
    return {"pk": {"S": sharded(f"usage#{day}", shard, shards)}, "sk": {"S": sk}}
