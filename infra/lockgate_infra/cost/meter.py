"""``lockgate cost --events N``: what a month of N webhook events costs on AWS, from measured usage.

Usage is measured, not assumed: the example workflow's traffic (customer emails with duplicates
and forgeries, agent runs, approvals, the housekeeping jobs) runs through the composed functions
on moto with no faults, and every AWS call each function makes is metered, refused ones too —
DynamoDB capacity units from the items as stored, transactions and secondary indexes included
(``cost/units.py``), SQS requests (the event source mapping's receives and deletes too), S3
requests, SES emails — together with each function's own compute time and its model calls.

What cannot be measured offline is assumed, and printed: AWS call latency (``--call-ms``), the
model's time per call (``--model-seconds``, what the worker is billed for while it waits), log
bytes per event, and the event source mapping's idle polling (``cost/bill.py`` prices it all;
``cost/prices.py``, dated).
Model dollars come from the run records' tokens per model, priced at the deployment's provider
(``lockgate cost`` reprices them with ``cost/model_dollars.py``), shown apart from AWS.
"""

from __future__ import annotations

import contextvars
import json
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from lockgate.clock import FixedClock
from lockgate.dynamo import error_code
from lockgate_infra.api_calls import intercepted
from lockgate_infra.chaos.drive import drive, seeded
from lockgate_infra.chaos.faults import FaultPlan, Rates
from lockgate_infra.chaos.housekeeping import housekeeping
from lockgate_infra.chaos.run import START, account
from lockgate_infra.chaos.traffic import traffic
from lockgate_infra.cost.hotkeys import KeyLoad, key_name
from lockgate_infra.cost.units import Tables, index_writes, item_bytes, table_write_units, units
from lockgate_infra.evals.shoprig import ROOT

LOG_BYTES_PER_EVENT = 3_000  # the functions' JSON log lines for one event (request metadata only)
WRITES = {"PutItem", "UpdateItem", "DeleteItem"}
READS = {"GetItem", "Query", "Scan", "BatchGetItem"}
# Refusals DynamoDB still bills: the write (or each item of the transaction) was evaluated.
BILLED_FAILURES = {"ConditionalCheckFailedException", "TransactionCanceledException"}
_FUNCTION = contextvars.ContextVar("function", default="")
_QUIET = contextvars.ContextVar("quiet", default=False)


@dataclass
class FunctionUsage:
    """One function's invocations over the sample."""

    memory_mb: int
    concurrency: int = 1  # records of one invocation in flight at once (the worker's batches)
    invocations: int = 0
    own_seconds: float = 0.0
    aws_calls: int = 0


@dataclass
class Usage:
    """Everything metered over the sample of events."""

    events: int
    posts: int = 0
    functions: dict[str, FunctionUsage] = field(default_factory=dict)
    write_units: float = 0.0  # on the tables
    index_write_units: float = 0.0  # on their secondary indexes (billed like table writes)
    read_units: float = 0.0
    sqs_requests: int = 0
    s3_puts: int = 0
    s3_gets: int = 0
    emails: int = 0
    model_calls: int = 0
    model_usd: float = 0.0
    model_tokens: Counter[str] = field(default_factory=Counter)  # input_tokens, output_tokens, ...
    by_model: dict[str, Counter[str]] = field(default_factory=dict)  # ...and dollars, per model id
    operations: Counter[str] = field(default_factory=Counter)
    keys: KeyLoad = field(default_factory=KeyLoad)  # units per item key: the hot-key meter

    def per_event(self, value: float) -> float:
        """A sample total, per event."""
        return value / self.events


class Meter:
    """Meters every botocore call in the process, attributed to the function making it."""

    def __init__(self, usage: Usage, quiet: Callable[[], AbstractContextManager[Any]] = nullcontext) -> None:
        self.usage = usage
        self._faults_off = quiet
        self._tables = Tables(self._quiet)

    @contextmanager
    def _quiet(self) -> Iterator[None]:
        """The meter's own reads: not metered, and no fault drawn for them."""
        token = _QUIET.set(True)
        try:
            with self._faults_off():
                yield
        finally:
            _QUIET.reset(token)

    def installed(self) -> AbstractContextManager[None]:
        """Route botocore API calls through the meter."""

        def metered(client: Any, operation: str, params: dict[str, Any], send: Callable[[], Any]) -> Any:
            if _QUIET.get():
                return send()
            started = time.perf_counter()
            service = client.meta.service_model.service_name
            writes = self._writes(client, operation, params) if service == "dynamodb" else []
            try:
                result = send()
            except ClientError as exc:
                # A refused call is a request too, and a failed condition still consumes the write.
                billed = error_code(exc) in BILLED_FAILURES
                self._count(client, operation, params, {}, units=billed)
                if billed:
                    self._written(client, writes, changed=False)
                raise
            else:
                self._count(client, operation, params, result)
                self._written(client, writes, changed=True)
            finally:
                function = self.usage.functions.get(_FUNCTION.get())
                if function is not None:
                    function.aws_calls += 1
                    function.own_seconds -= time.perf_counter() - started  # AWS time is not our code
            return result

        return intercepted(metered)

    def timed(self, name: str, call: Callable[..., Any]) -> Callable[..., Any]:
        """``call`` as one invocation of function ``name``."""

        def invocation(*args: Any, **kwargs: Any) -> Any:
            token = _FUNCTION.set(name)
            started = time.perf_counter()
            try:
                return call(*args, **kwargs)
            finally:
                function = self.usage.functions[name]
                function.invocations += 1
                function.own_seconds += time.perf_counter() - started
                _FUNCTION.reset(token)

        return invocation

    def _count(
        self,
        client: Any,
        operation: str,
        params: dict[str, Any],
        result: Any,
        *,
        units: bool = True,
    ) -> None:
        service = client.meta.service_model.service_name
        usage, ours = self.usage, bool(_FUNCTION.get())
        if service == "sqs" and (ours or operation == "DeleteMessage" or result.get("Messages")):
            usage.sqs_requests += 1  # the event source mapping's receives and deletes are billed too
        if not ours:
            return  # the harness's own reads and the reviewers' listing are not the product's
        usage.operations[f"{service}.{operation}"] += 1
        if service == "dynamodb" and units:
            self._capacity(client, operation, params, result)
        elif service == "s3":
            usage.s3_puts += operation == "PutObject"
            usage.s3_gets += operation == "GetObject"
        elif service == "ses" and operation in ("SendEmail", "SendRawEmail"):
            usage.emails += len(params.get("Destination", {}).get("ToAddresses", [])) or 1

    def _capacity(self, client: Any, operation: str, params: dict[str, Any], result: Any) -> None:
        if operation == "BatchGetItem":  # each item is read (and rounded up) on its own
            for table, items in result.get("Responses", {}).items():
                for item in items:
                    self._read(client, table, item, units(item_bytes(item), 4096), whole=True)
        elif operation in READS:
            read = result.get("Items") or ([result["Item"]] if "Item" in result else [])
            billed = units(sum(item_bytes(item) for item in read), 4096)
            if read:  # a query reads one partition: its units land on the first item's key
                self._read(client, params["TableName"], read[0], billed, whole=operation == "GetItem")
            else:
                self.usage.read_units += billed

    def _read(self, client: Any, table: str, item: dict[str, Any], billed: int, *, whole: bool) -> None:
        """Count a read on the item's key (a query's on its partition: ``pk / *``)."""
        self.usage.read_units += billed
        key = self._tables.table(client, table).key_of(item)
        if not whole:
            key = dict(list(key.items())[:1])
        self.usage.keys.reads[key_name(table, key) + ("" if whole else " / *")] += billed

    def _writes(self, client: Any, operation: str, params: dict[str, Any]) -> list[_Write]:
        """The items a write call touches, with their images before it (none for other calls)."""
        if not _FUNCTION.get():
            return []
        if operation in WRITES:
            parts, weight = [params], 1
        elif operation == "TransactWriteItems":  # transactions cost two units per item-KB
            parts = [next(iter(item.values())) for item in params.get("TransactItems", [])]
            weight = 2
        else:
            return []
        writes = []
        for part in parts:
            if "Key" not in part and "Item" not in part:
                continue
            table = self._tables.table(client, part["TableName"])
            key = part.get("Key") or table.key_of(part["Item"])
            before = self._tables.image(client, part["TableName"], key)
            writes.append(_Write(part["TableName"], key, part.get("Item"), before, weight))
        return writes

    def _written(self, client: Any, writes: list[_Write], *, changed: bool) -> None:
        for write in writes:
            after = self._tables.image(client, write.table, write.key) if changed else write.before
            billed = write.weight * table_write_units(write.before, after, write.sent)
            self.usage.write_units += billed
            self.usage.keys.writes[key_name(write.table, write.key)] += billed
            if changed:
                table = self._tables.table(client, write.table)
                for index, entry, index_units in index_writes(table, write.before, after):
                    self.usage.index_write_units += index_units
                    self.usage.keys.writes[key_name(write.table, entry, index.name)] += index_units


@dataclass(frozen=True)
class _Write:
    """One item a write call touches: where, what was sent, and the item before the call."""

    table: str
    key: Mapping[str, Any]
    sent: Mapping[str, Any] | None
    before: Mapping[str, Any] | None
    weight: int  # 2 inside a transaction


def measure(events: int = 30, seed: int = 1) -> Usage:
    """Run the example traffic without faults and meter it."""
    from lockgate_infra.local.template import LocalPlan, load_template

    functions = LocalPlan.from_template(load_template(ROOT / "template.yaml")).functions
    memory = {
        "receiver": functions["WebhookReceiverFunction"].memory_mb,
        "worker": functions["AgentWorkerFunction"].memory_mb,
        "approval": functions["ApprovalCallbackFunction"].memory_mb,
    }
    usage = Usage(events=events, functions={name: FunctionUsage(mb) for name, mb in memory.items()})
    worker_env = functions["AgentWorkerFunction"].environment
    usage.functions["worker"].concurrency = int(worker_env.get("WORKER_RECORD_CONCURRENCY", "1"))
    plan = FaultPlan(seed, Rates(aws_before=0, aws_after=0, crash_after_effect=0, reenter=0, model=0))
    meter = Meter(usage, plan.quiet)
    sends = traffic(seeded(seed), events)
    with account(plan, FixedClock(START)) as world, meter.installed():
        world.receiver.receive = meter.timed("receiver", world.receiver.receive)  # type: ignore[method-assign]
        for worker in world.workers:
            worker.process = meter.timed("worker", worker.process)  # type: ignore[method-assign]
        world.desk.show = meter.timed("approval", world.desk.show)  # type: ignore[method-assign]
        world.desk.decide = meter.timed("approval", world.desk.decide)  # type: ignore[method-assign]
        drive(world, plan, sends, housekeeping(world))
        usage.posts = sum(len(send.answers) for send in sends)
        usage.model_calls = world.stub.calls
        runs = [
            json.loads(item["totals"]["S"])
            for item in world.scan("StateTable")
            if item["pk"]["S"].startswith("run#") and item["sk"]["S"] == "meta" and "totals" in item
        ]
        usage.model_usd = sum(totals.get("cost_usd", 0.0) for totals in runs)
        for totals in runs:
            usage.model_tokens.update(totals.get("usage", {}))
            for model, counted in totals.get("by_model", {}).items():
                usage.by_model.setdefault(model, Counter()).update(counted)
    return usage
