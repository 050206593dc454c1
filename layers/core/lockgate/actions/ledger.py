"""The operation ledger: every side effect runs at most once, keyed by the system, never by the model.

States: PENDING → IN_PROGRESS → SUCCEEDED | FAILED | UNKNOWN, each transition one conditional write.
UNKNOWN (may or may not have happened) is never retried blindly: a reconcile hook or a person settles it.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from lockgate.actions.tools import OutcomeUnknown, ToolError
from lockgate.clock import Clock
from lockgate.dynamo import error_code, write_if
from lockgate.errors import Deferred, LockgateError, StoreUnavailable
from lockgate.index_shards import ShardedIndex, shard_attribute
from lockgate.schema import check_readable, stamped

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

RETENTION_SECONDS = 90 * 86_400
# Sparse: only IN_PROGRESS and UNKNOWN entries carry ``open_state`` (the reconcile job's worklist);
# its partitions are a state and the shard the entry's key hashes to.
OPEN_INDEX = "open-operations-sharded"


class OpState(StrEnum):
    """Where an operation is."""

    PENDING = "PENDING"
    IN_PROGRESS = "IN_PROGRESS"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    UNKNOWN = "UNKNOWN"


class LedgerConflict(LockgateError):
    """The same operation key was used with different arguments: refused, not a second action."""


@dataclass(frozen=True)
class Operation:
    """One ledger entry."""

    key: str
    fingerprint: str
    state: OpState
    tool: str
    run_id: str
    summary: str
    idempotency_key: str
    result: Any = None
    error: str | None = None
    owner: str | None = None
    lease_expires_at: int | None = None
    updated_at: int | None = None

    @classmethod
    def from_item(cls, item: dict[str, Any]) -> Operation:
        """From a low-level DynamoDB item; SchemaTooNew if a newer version wrote it."""
        check_readable(item, f"operation {item.get('op_key', {}).get('S', '?')}")
        text = {k: v.get("S") for k, v in item.items() if "S" in v}
        nums = {k: int(v["N"]) for k, v in item.items() if "N" in v}
        return cls(
            key=text.get("op_key", ""),
            fingerprint=text.get("fingerprint", ""),
            state=OpState(text.get("state", OpState.PENDING.value)),
            tool=text.get("tool", ""),
            run_id=text.get("run_id", ""),
            summary=text.get("summary", ""),
            idempotency_key=text.get("idempotency_key", ""),
            result=json.loads(text["result"]) if text.get("result") else None,
            error=text.get("error"),
            owner=text.get("owner"),
            lease_expires_at=nums.get("lease_expires_at"),
            updated_at=nums.get("updated_at"),
        )


def idempotency_key_for(op_key: str) -> str:
    """The key passed downstream: short, stable, safe in any provider's header."""
    return "lg_" + hashlib.sha256(op_key.encode()).hexdigest()[:40]


class Ledger:
    """Runs side effects through conditional writes in the State table."""

    def __init__(
        self, dynamodb: DynamoDBClient, table_name: str, clock: Clock, lease_seconds: int = 120
    ) -> None:
        self._db = dynamodb
        self._table = table_name
        self._clock = clock
        self._lease_seconds = lease_seconds
        self._open = ShardedIndex(table_name, OPEN_INDEX, "opened_at")

    def execute(
        self,
        *,
        op_key: str,
        fingerprint: str,
        tool: str,
        run_id: str,
        summary: str,
        effect: Callable[[str], Any],
        is_failure: Callable[[BaseException], bool] = lambda exc: isinstance(exc, ToolError),
        is_unknown: Callable[[BaseException], bool] = lambda exc: isinstance(exc, OutcomeUnknown),
    ) -> Operation:
        """Run ``effect(idempotency_key)`` once for ``op_key``; a repeat returns the recorded outcome.

        ``is_failure`` says which exceptions are a definite failure (recorded FAILED, returned on
        repeats; a tool's ``ToolError`` by default); ``is_unknown`` which leave the outcome uncertain
        (UNKNOWN; ``OutcomeUnknown`` by default). Anything else also becomes UNKNOWN: we cannot tell
        whether the effect happened.
        """
        owner = uuid.uuid4().hex
        now = int(self._clock.now())
        started = self._begin(op_key, fingerprint, tool, run_id, summary, owner, now)
        if started is not None:
            return started  # already decided (or conflicting / busy: raised)
        idem = idempotency_key_for(op_key)
        try:
            result = effect(idem)
        except BaseException as exc:
            state = OpState.FAILED if is_failure(exc) and not is_unknown(exc) else OpState.UNKNOWN
            self._complete(op_key, owner, state, None, f"{type(exc).__name__}: {exc}"[:1000])
            if state is OpState.UNKNOWN and not isinstance(exc, Exception):
                raise  # KeyboardInterrupt/SystemExit: record, then let it go
            return self.get(op_key) or Operation(op_key, fingerprint, state, tool, run_id, summary, idem)
        self._complete(op_key, owner, OpState.SUCCEEDED, result, None)
        return Operation(op_key, fingerprint, OpState.SUCCEEDED, tool, run_id, summary, idem, result=result)

    def get(self, op_key: str) -> Operation | None:
        """The operation, if recorded."""
        try:
            response = self._db.get_item(TableName=self._table, Key=item_key(op_key), ConsistentRead=True)
        except (ClientError, BotoCoreError) as exc:
            raise StoreUnavailable(type(exc).__name__) from exc
        return Operation.from_item(response["Item"]) if response.get("Item") else None

    def mark_unknown_if_stuck(self, op_key: str) -> bool:
        """An IN_PROGRESS operation past its lease becomes UNKNOWN (its executor died mid-call)."""
        now = int(self._clock.now())
        return write_if(
            self._db.update_item,
            TableName=self._table,
            Key=item_key(op_key),
            UpdateExpression="SET #st = :unknown, open_state = :unknown, updated_at = :now, #err = :why",
            ConditionExpression="#st = :running AND lease_expires_at < :now",
            ExpressionAttributeNames={"#st": "state", "#err": "error"},
            ExpressionAttributeValues={
                ":unknown": {"S": OpState.UNKNOWN.value},
                ":running": {"S": OpState.IN_PROGRESS.value},
                ":now": {"N": str(now)},
                ":why": {"S": "executor stopped mid-call; outcome unknown"},
            },
        )

    def open_page(
        self, state: OpState, start: dict[str, Any] | None = None, limit: int = 50
    ) -> tuple[list[Operation], dict[str, Any] | None]:
        """One page of IN_PROGRESS or UNKNOWN entries (oldest first in each shard), and the next start."""
        items, after = self._open.page(
            self._db.query, start, "open_state = :s", {":s": {"S": state.value}}, limit=limit
        )
        return [Operation.from_item(item) for item in items], after

    def resolve_unknown(self, op_key: str, state: OpState, result: Any, error: str | None) -> bool:
        """Settle an UNKNOWN entry: SUCCEEDED with its result, or FAILED with why; False if not UNKNOWN."""
        values = {
            ":state": {"S": state.value},
            ":unknown": {"S": OpState.UNKNOWN.value},
            ":now": {"N": str(int(self._clock.now()))},
        }
        if state is OpState.SUCCEEDED:
            values[":value"] = {"S": json.dumps(result, default=str)[:100_000]}
            update = "SET #st = :state, #res = :value, updated_at = :now REMOVE open_state, #err"
        else:
            values[":value"] = {"S": (error or "settled as failed")[:1000]}
            update = "SET #st = :state, #err = :value, updated_at = :now REMOVE open_state, #res"
        return write_if(
            self._db.update_item,
            TableName=self._table,
            Key=item_key(op_key),
            UpdateExpression=update,
            ConditionExpression="#st = :unknown",
            ExpressionAttributeNames={"#st": "state", "#res": "result", "#err": "error"},
            ExpressionAttributeValues=values,
        )

    def _begin(
        self, op_key: str, fingerprint: str, tool: str, run_id: str, summary: str, owner: str, now: int
    ) -> Operation | None:
        item = stamped(
            {
                **item_key(op_key),
                "op_key": {"S": op_key},
                "fingerprint": {"S": fingerprint},
                "tool": {"S": tool},
                "run_id": {"S": run_id},
                "summary": {"S": summary[:500]},
                "idempotency_key": {"S": idempotency_key_for(op_key)},
                "state": {"S": OpState.IN_PROGRESS.value},
                "open_state": {"S": OpState.IN_PROGRESS.value},
                "opened_at": {"N": str(now)},  # the open index's sort key (a name no other State item uses)
                **shard_attribute(op_key),
                "owner": {"S": owner},
                "lease_expires_at": {"N": str(now + self._lease_seconds)},
                "created_at": {"N": str(now)},
                "updated_at": {"N": str(now)},
                "ttl": {"N": str(now + RETENTION_SECONDS)},
            }
        )
        try:
            self._db.put_item(
                TableName=self._table,
                Item=item,
                ConditionExpression="attribute_not_exists(pk) OR (#st = :pending AND fingerprint = :fp)",
                ExpressionAttributeNames={"#st": "state"},
                ExpressionAttributeValues={
                    ":pending": {"S": OpState.PENDING.value},
                    ":fp": {"S": fingerprint},
                },
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if error_code(exc) != "ConditionalCheckFailedException":
                raise StoreUnavailable(error_code(exc)) from exc
            old = exc.response.get("Item")
            if not old:
                raise StoreUnavailable("ledger condition failed without an item") from exc
            return self._existing(Operation.from_item(old), fingerprint, now)  # type: ignore[arg-type]
        except BotoCoreError as exc:
            raise StoreUnavailable(type(exc).__name__) from exc
        return None

    def _existing(self, op: Operation, fingerprint: str, now: int) -> Operation:
        if op.fingerprint != fingerprint:
            raise LedgerConflict(f"operation {op.key!r} was already used with different arguments")
        if op.state is OpState.IN_PROGRESS:
            if (op.lease_expires_at or 0) >= now:
                raise Deferred(
                    f"operation {op.key} is running elsewhere",
                    delay_seconds=max(1, (op.lease_expires_at or now) - now),
                )
            self.mark_unknown_if_stuck(op.key)
            return self.get(op.key) or op
        return op  # SUCCEEDED / FAILED / UNKNOWN: the recorded outcome, never a second action

    def _complete(self, op_key: str, owner: str, state: OpState, result: Any, error: str | None) -> None:
        values: dict[str, Any] = {
            ":state": {"S": state.value},
            ":owner": {"S": owner},
            ":now": {"N": str(int(self._clock.now()))},
            ":running": {"S": OpState.IN_PROGRESS.value},
        }
        names = {"#st": "state", "#owner": "owner"}
        sets = ["#st = :state", "updated_at = :now"]
        if result is not None:
            values[":result"] = {"S": json.dumps(result, default=str)[:100_000]}
            names["#res"] = "result"
            sets.append("#res = :result")
        if error is not None:
            values[":error"] = {"S": error}
            names["#err"] = "error"
            sets.append("#err = :error")
        # UNKNOWN stays in the open index for the reconcile job; a settled entry leaves it.
        removes = ["lease_expires_at"]
        if state is OpState.UNKNOWN:
            sets.append("open_state = :state")
        else:
            removes.append("open_state")
        try:
            self._db.update_item(
                TableName=self._table,
                Key=item_key(op_key),
                UpdateExpression="SET " + ", ".join(sets) + " REMOVE " + ", ".join(removes),
                ConditionExpression="#st = :running AND #owner = :owner",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
            )
        except ClientError as exc:
            if error_code(exc) == "ConditionalCheckFailedException":
                # Our lease ran out and the entry moved on (e.g. marked UNKNOWN): keep its state.
                return
            raise StoreUnavailable(error_code(exc)) from exc


def item_key(op_key: str) -> dict[str, Any]:  # the entry's DynamoDB key: pk "op#<op_key>"
    return {"pk": {"S": f"op#{op_key}"}, "sk": {"S": "op"}}
