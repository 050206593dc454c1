"""Durable runs: one per inbox event, every model reply and tool outcome recorded in the State table.

A retried delivery replays recorded steps instead of calling the model again; tool
outcomes come back from the record (and the ledger), so nothing runs twice.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from botocore.exceptions import BotoCoreError, ClientError

from lockgate.agent.step_items import step_data, step_json
from lockgate.clock import Clock
from lockgate.dynamo import error_code, read_all, read_page, write_if
from lockgate.errors import StoreUnavailable
from lockgate.schema import check_readable, stamped

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

RETENTION_SECONDS = 30 * 86_400
MAX_STEP_JSON = 350_000  # a DynamoDB item holds 400 KB


@dataclass(frozen=True)
class Step:
    """One recorded step: a model reply ("model") or the answers to its tool calls ("tools")."""

    n: int
    kind: str
    data: dict[str, Any]


@dataclass
class Run:
    """A run's header and its recorded steps."""

    run_id: str
    task: str
    delivery: str
    status: str = "running"
    outcome: str = ""
    steps: list[Step] = field(default_factory=list)
    created_at: int = 0
    updated_at: int = 0
    totals: dict[str, Any] = field(default_factory=dict)
    resumed_by: str = ""  # the decision (``<approval id>#<outcome>``) that last reopened it, if any

    def step(self, n: int, kind: str) -> Step | None:
        """The recorded step ``n`` of this kind, if any."""
        for step in self.steps:
            if step.n == n and step.kind == kind:
                return step
        return None


class Runs(Protocol):
    """Where runs are recorded: ``RunStore`` in DynamoDB, an in-memory fake in the loop's tests."""

    def open(self, run_id: str, task: str, delivery: str) -> Run:
        """Create the run, or load it with its steps if this delivery was tried before."""
        ...

    def record(self, run: Run, n: int, kind: str, data: dict[str, Any]) -> Step:
        """Write step ``n`` once; if it already exists, the stored one."""
        ...

    def finish(self, run: Run, status: str, outcome: str, totals: dict[str, Any]) -> bool:
        """Record how the run ended; False when it had already ended (a replay changes nothing)."""
        ...

    def reopen(self, run: Run, resumed_by: str) -> bool:
        """Open an ended run again for a person's decision; False if it runs, or ended otherwise since."""
        ...

    def get(self, run_id: str) -> Run | None:
        """A run with all its steps, or None."""
        ...


class RunStore:
    """Reads and writes runs; a step, once written, is never overwritten."""

    def __init__(self, dynamodb: DynamoDBClient, table_name: str, clock: Clock) -> None:
        self._db = dynamodb
        self._table = table_name
        self._clock = clock

    def open(self, run_id: str, task: str, delivery: str) -> Run:
        """Create the run, or load it with its steps if this delivery was tried before."""
        now = int(self._clock.now())
        try:
            self._db.put_item(
                TableName=self._table,
                Item=stamped(
                    {
                        "pk": {"S": _pk(run_id)},
                        "sk": {"S": "meta"},
                        "task": {"S": task},
                        "delivery": {"S": delivery},
                        "status": {"S": "running"},
                        "created_at": {"N": str(now)},
                        "updated_at": {"N": str(now)},
                        "ttl": {"N": str(now + RETENTION_SECONDS)},
                    }
                ),
                ConditionExpression="attribute_not_exists(pk)",
            )
        except ClientError as exc:
            if error_code(exc) != "ConditionalCheckFailedException":
                raise StoreUnavailable(error_code(exc)) from exc
            found = self.get(run_id)
            if found is None:
                raise StoreUnavailable("run vanished between writes") from exc
            return found
        except BotoCoreError as exc:
            raise StoreUnavailable(type(exc).__name__) from exc
        return Run(run_id, task, delivery, created_at=now, updated_at=now)

    def record(self, run: Run, n: int, kind: str, data: dict[str, Any]) -> Step:
        """Write step ``n`` once; if it already exists (a concurrent replay), return the stored one."""
        body = json.dumps(data, default=str)
        if len(body) > MAX_STEP_JSON:
            raise StoreUnavailable(f"step {n} of {run.run_id} is too large to record ({len(body)} bytes)")
        now = int(self._clock.now())
        stored_as, schema = step_data(body)
        try:
            self._db.put_item(
                TableName=self._table,
                Item=stamped(
                    {
                        "pk": {"S": _pk(run.run_id)},
                        "sk": {"S": f"step#{n:03d}#{kind}"},
                        "n": {"N": str(n)},
                        "kind": {"S": kind},
                        **stored_as,
                        "at": {"N": str(now)},
                        "ttl": {"N": str(now + RETENTION_SECONDS)},
                    },
                    schema,
                ),
                ConditionExpression="attribute_not_exists(pk)",
            )
        except ClientError as exc:
            if error_code(exc) != "ConditionalCheckFailedException":
                raise StoreUnavailable(error_code(exc)) from exc
            stored = (self.get(run.run_id) or run).step(n, kind)
            if stored is None:
                raise StoreUnavailable("step vanished between writes") from exc
            return stored
        except BotoCoreError as exc:
            raise StoreUnavailable(type(exc).__name__) from exc
        step = Step(n, kind, data)
        run.steps.append(step)
        return step

    def finish(self, run: Run, status: str, outcome: str, totals: dict[str, Any]) -> bool:
        """Record how the run ended and its totals (tokens, cost, blocked calls, taint), once.

        Only the write that moves the run from ``running`` counts: a replayed finish (a redelivery
        after a crash) returns False and changes nothing, so what follows a finish happens once.
        """
        now = int(self._clock.now())
        if not write_if(
            self._db.update_item,
            TableName=self._table,
            Key={"pk": {"S": _pk(run.run_id)}, "sk": {"S": "meta"}},
            UpdateExpression="SET #s = :s, outcome = :o, totals = :t, updated_at = :now",
            ConditionExpression="#s = :running",
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues={
                ":s": {"S": status},
                ":o": {"S": outcome[:2000]},
                ":t": {"S": json.dumps(totals, default=str, separators=(",", ":"))},
                ":now": {"N": str(now)},
                ":running": {"S": "running"},
            },
        ):
            return False
        run.status, run.outcome, run.totals, run.updated_at = status, outcome, totals, now
        return True

    def reopen(self, run: Run, resumed_by: str) -> bool:
        """Open an ended run again for a person's decision (``resumed_by``), so it can continue and finish.

        The write expects the status ``run`` was read with: of two decisions racing to resume one run,
        one reopens it and the other finds it running (and waits for it to end again).
        """
        if run.status == "running":
            return False
        now = int(self._clock.now())
        if not write_if(
            self._db.update_item,
            TableName=self._table,
            Key={"pk": {"S": _pk(run.run_id)}, "sk": {"S": "meta"}},
            UpdateExpression="SET #s = :running, resumed_by = :by, updated_at = :now",
            ConditionExpression="#s = :ended",
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues={
                ":running": {"S": "running"},
                ":by": {"S": resumed_by},
                ":now": {"N": str(now)},
                ":ended": {"S": run.status},
            },
        ):
            return False
        run.status, run.resumed_by, run.updated_at = "running", resumed_by, now
        return True

    def get(self, run_id: str) -> Run | None:
        """A run with all its steps, or None."""
        items = read_all(
            self._db.query,
            TableName=self._table,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": {"S": _pk(run_id)}},
            ConsistentRead=True,
        )
        meta = next((i for i in items if i["sk"]["S"] == "meta"), None)
        if meta is None:
            return None
        for item in items:
            check_readable(item, f"run {run_id}")
        steps = sorted(
            (
                Step(int(i["n"]["N"]), i["kind"]["S"], step_json(i))
                for i in items
                if i["sk"]["S"].startswith("step#")
            ),
            key=lambda s: (s.n, s.kind != "model"),
        )
        run = _header(meta)
        run.steps = steps
        return run


def page_of_runs(
    dynamodb: DynamoDBClient, table_name: str, since: int, start: dict[str, Any] | None = None
) -> tuple[list[Run], dict[str, Any] | None]:
    """One page of a filtered Scan for run headers created since ``since`` (no steps), and where the
    next page starts. There is no index by time: this is for operators, not for the request path."""
    items, after = read_page(
        dynamodb.scan,
        start,
        TableName=table_name,
        FilterExpression="begins_with(pk, :run) AND sk = :meta AND created_at >= :since",
        ExpressionAttributeValues={
            ":run": {"S": _pk("")},
            ":meta": {"S": "meta"},
            ":since": {"N": str(since)},
        },
    )
    return [_header(item) for item in items], after


def _header(meta: dict[str, Any]) -> Run:
    """A run's header from its meta item."""
    return Run(
        run_id=meta["pk"]["S"].removeprefix(_pk("")),
        task=meta["task"]["S"],
        delivery=meta["delivery"]["S"],
        status=meta["status"]["S"],
        outcome=meta.get("outcome", {}).get("S", ""),
        created_at=int(meta["created_at"]["N"]),
        updated_at=int(meta["updated_at"]["N"]),
        totals=json.loads(meta["totals"]["S"]) if "totals" in meta else {},
        resumed_by=meta.get("resumed_by", {}).get("S", ""),
    )


def _pk(run_id: str) -> str:
    return f"run#{run_id}"
