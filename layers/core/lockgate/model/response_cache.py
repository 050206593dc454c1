"""Saved answers for cacheable tasks: the same request again is answered from the State table, free.

The key is a hash of everything that decides the answer (model, system, tools, messages, output
limit), so a changed prompt or tool is a miss, never a stale hit. An item lives under
``respcache#<hash>`` with the table's ``ttl`` attribute; DynamoDB deletes expired items lazily, so
a read also checks the expiry itself. Saving is one conditional put: the first answer stands.
The cache is an optimisation: if the table cannot be read or written, the call goes to the model.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from lockgate.clock import Clock
from lockgate.dynamo import conditional_failed, read_keys
from lockgate.errors import StoreUnavailable
from lockgate.model.client import ModelReply, ModelRequest, Usage
from lockgate.telemetry import Log, Metrics

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

DEFAULT_TTL_SECONDS = 7 * 86_400
MAX_ANSWER_BYTES = 300_000  # a DynamoDB item holds 400 KB; bigger answers are simply not saved
KEY_PREFIX = "respcache#"


def request_key(request: ModelRequest) -> str:
    """A stable hash of what decides the answer; cache markers and their TTL do not."""
    identity = {
        "model": request.model,
        "system": request.system,
        "tools": list(request.tools),
        "messages": list(request.messages),
        "max_tokens": request.max_tokens,
    }
    if request.output_schema is not None:  # only then, so keys of other requests stay as they were
        identity["output_schema"] = dict(request.output_schema)
    canonical = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


class ResponseCache:
    """Looks up and saves whole model answers for tasks marked cacheable."""

    def __init__(
        self,
        dynamodb: DynamoDBClient,
        table: str,
        clock: Clock,
        *,
        log: Log,
        metrics: Metrics,
        ttl_seconds: int = DEFAULT_TTL_SECONDS,
    ) -> None:
        self._db = dynamodb
        self._table = table
        self._clock = clock
        self._log = log
        self._metrics = metrics
        self._ttl = ttl_seconds

    def get(self, request: ModelRequest) -> ModelReply | None:
        """The saved answer (zero usage, marked as a cache hit), or None."""
        return self.get_many([request])[0]

    def get_many(self, requests: Sequence[ModelRequest]) -> list[ModelReply | None]:
        """The saved answer for each request, or None; one read for all of them (one GetItem for one).

        Keys left unprocessed by DynamoDB count as not saved: those calls go to the model.
        """
        keys = [request_key(request) for request in requests]
        try:
            items = self._items(list(dict.fromkeys(keys)))
        except (ClientError, BotoCoreError, StoreUnavailable) as exc:
            self._unavailable("read", exc)
            return [None] * len(requests)
        return [self._saved(items.get(key)) for key in keys]

    def _items(self, keys: list[str]) -> dict[str, dict[str, Any]]:
        """The stored items of these distinct keys, by key."""
        if len(keys) == 1:
            item = self._db.get_item(TableName=self._table, Key=_key(keys[0])).get("Item")
            return {keys[0]: item} if item is not None else {}
        items = read_keys(self._db, self._table, [_key(key) for key in keys])
        return {item["pk"]["S"].removeprefix(KEY_PREFIX): item for item in items}

    def _saved(self, item: dict[str, Any] | None) -> ModelReply | None:
        if item is None or int(item.get("ttl", {}).get("N", "0")) <= self._clock.now():
            self._metrics.add_metric(name="ResponseCacheMiss", unit="Count", value=1)
            return None
        saved = ModelReply.from_dict(json.loads(item["answer"]["S"]))
        self._metrics.add_metric(name="ResponseCacheHit", unit="Count", value=1)
        return ModelReply(
            content=saved.content,
            stop_reason=saved.stop_reason,
            usage=Usage(),  # nothing was billed for this answer
            model=saved.model,
            request_id=saved.request_id,
            cache_hit=True,
        )

    def put(self, request: ModelRequest, reply: ModelReply) -> None:
        """Save a complete answer once (an existing one is kept); cut-off answers are never saved."""
        if reply.stop_reason == "max_tokens" or reply.cache_hit:
            return
        answer = json.dumps(reply.as_dict(), default=str)
        if len(answer) > MAX_ANSWER_BYTES:
            return
        now = int(self._clock.now())
        try:
            self._db.put_item(
                TableName=self._table,
                Item={
                    **_key(request_key(request)),
                    "answer": {"S": answer},
                    "model": {"S": request.model},
                    "saved_at": {"N": str(now)},
                    "ttl": {"N": str(now + self._ttl)},
                },
                # An expired item not yet deleted by DynamoDB may be replaced; a live one stands.
                ConditionExpression="attribute_not_exists(pk) OR #ttl <= :now",
                ExpressionAttributeNames={"#ttl": "ttl"},
                ExpressionAttributeValues={":now": {"N": str(now)}},
            )
        except ClientError as exc:
            if not conditional_failed(exc):
                self._unavailable("write", exc)
        except BotoCoreError as exc:
            self._unavailable("write", exc)

    def _unavailable(self, what: str, exc: Exception) -> None:
        self._metrics.add_metric(name="ResponseCacheUnavailable", unit="Count", value=1)
        self._log.warning("response cache unavailable", extra={"op": what, "error": type(exc).__name__})


def _key(digest: str) -> dict[str, Any]:
    return {"pk": {"S": f"{KEY_PREFIX}{digest}"}, "sk": {"S": "answer"}}
