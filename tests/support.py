"""Shared test support: building the core objects on moto, signing deliveries, fault injection."""

from __future__ import annotations

import io
import logging
import re
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any, TextIO

import boto3
from botocore.exceptions import ClientError

from lockgate.clock import FixedClock
from lockgate.config import LockgateConfig, parse_config
from lockgate.errors import LockgateError
from lockgate.http import HttpResponse, RawRequest, error_response
from lockgate.inbox.receipt import Receiver
from lockgate.inbox.routing import Router
from lockgate.inbox.store import InboxStore
from lockgate.inbox.worker import Leasing, Worker
from lockgate.model.price_table import PriceTable
from lockgate.runtime.deps import Deps, OnePerService
from lockgate.runtime.receiver import build_receiver
from lockgate.runtime.worker import inbox_worker
from lockgate.secrets import SecretResolver
from lockgate.settings import ReceiverSettings, WorkerSettings
from lockgate.telemetry import CountingMetrics
from lockgate_infra.local.provision import Provisioner
from lockgate_infra.local.template import LocalPlan

LOG = logging.getLogger("lockgate.tests")
PRICES = PriceTable.published()  # the published prices only: a deployment without [models]

SECRETS = {
    "GITHUB_SECRET": "It's a Secret to Everybody",
    "STRIPE_SECRET": "whsec_stripe_test_secret",
    "STANDARD_SECRET": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
    "STANDARD_SECRET_OLD": "whsec_dGhlLW9sZC1zZWNyZXQtdmFsdWUtMTIzNDU2",
    "SLACK_SECRET": "8f742231b10e8888abcd99yyyzzz85a5",
    "SHOPIFY_SECRET": "shpss_test_secret",
    "PARTNER_SECRET": "partner-shared-secret",
}

TEST_CONFIG: dict[str, Any] = {
    "sources": {
        "github": {"scheme": "github", "secrets": ["env:GITHUB_SECRET"]},
        "stripe": {"scheme": "stripe", "secrets": ["env:STRIPE_SECRET"], "tolerance_seconds": 300},
        "helpdesk": {"scheme": "standard", "secrets": ["env:STANDARD_SECRET", "env:STANDARD_SECRET_OLD"]},
        "slack": {"scheme": "slack", "secrets": ["env:SLACK_SECRET"]},
        "shopify": {"scheme": "shopify", "secrets": ["env:SHOPIFY_SECRET"]},
        "partner": {
            "scheme": "hmac",
            "secrets": ["env:PARTNER_SECRET"],
            "header": "X-Partner-Signature",
            "prefix": "sha256=",
            "id_header": "X-Partner-Delivery",
            "event_type_field": "type",
            "max_body_bytes": 2_000_000,
        },
    },
    "inbox": {"max_attempts": 5, "requeue_after_seconds": 120, "max_item_body_bytes": 50_000},
}


def make_config(**inbox: int) -> LockgateConfig:
    """The test deployment's config, with inbox settings overridden."""
    raw = {**TEST_CONFIG, "inbox": {**TEST_CONFIG["inbox"], **inbox}}
    return parse_config(raw)


@dataclass
class Aws:
    """moto clients and the physical names of the template's resources."""

    session: boto3.session.Session
    names: dict[str, str]

    def client(self, service: str) -> Any:
        return self.session.client(service)

    @property
    def inbox_table(self) -> str:
        return self.names["InboxTable"]

    @property
    def state_table(self) -> str:
        return self.names["StateTable"]

    @property
    def queue_url(self) -> str:
        return self.names["InboxQueue"]

    @property
    def dlq_url(self) -> str:
        return self.names["InboxDLQ"]

    @property
    def bucket(self) -> str:
        return self.names["BodyBucket"]

    def inbox_items(self) -> list[dict[str, Any]]:
        return self.client("dynamodb").scan(TableName=self.inbox_table, ConsistentRead=True)["Items"]

    def drain(self, queue_url: str, max_messages: int = 1000) -> list[dict[str, Any]]:
        """Receive (and delete) everything visible in a queue."""
        sqs, out = self.client("sqs"), []
        while len(out) < max_messages:
            got = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, AttributeNames=["All"]).get(
                "Messages", []
            )
            if not got:
                return out
            for m in got:
                sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=m["ReceiptHandle"])
            out.extend(got)
        return out


ALREADY_THERE = {"ResourceInUseException", "ResourceExistsException", "BucketAlreadyOwnedByYou"}


class OnDemand:
    """Creates a table, bucket or secret of the template the first time an AWS call names it.

    A test's moto account then holds only what the test uses (its queues, which it names by a
    URL moto gives, are created up front). Every boto3 client in the process is covered, not only
    the test's session: the code under test may build its own.
    """

    def __init__(self, plan: LocalPlan, session: boto3.session.Session) -> None:
        self.provisioner = Provisioner(plan, session)
        self._lazy = {
            r.name: r.logical_id
            for r in (*plan.tables.values(), *plan.buckets.values(), *plan.secrets.values())
        }
        self._lock = threading.RLock()
        self._inside = threading.local()  # this thread is creating: its own calls pass straight through

    def __call__(self, client: Any, operation: str, params: dict[str, Any], send: Callable[[], Any]) -> Any:
        if not getattr(self._inside, "creating", False):
            for name in _named(params):
                logical_id = self._lazy.get(name)
                if logical_id is not None and logical_id not in self.provisioner.created:
                    self._create(logical_id, name)
        return send()

    def _create(self, logical_id: str, name: str) -> None:
        with self._lock:
            self._inside.creating = True
            try:
                self.provisioner.create(logical_id)
            except ClientError as exc:  # the test made it itself (e.g. `lockgate secrets set`)
                if exc.response["Error"]["Code"] not in ALREADY_THERE:
                    raise
                self.provisioner.created[logical_id] = name
            finally:
                self._inside.creating = False


def _named(params: dict[str, Any]) -> list[str]:
    """The resource names an AWS call's parameters mention (tables, buckets, secrets)."""
    names = [params[key] for key in ("TableName", "Bucket", "SecretId") if isinstance(params.get(key), str)]
    names += list(params.get("RequestItems", {}))  # BatchGetItem, BatchWriteItem
    for item in params.get("TransactItems", []):
        names += [
            part["TableName"] for part in item.values() if isinstance(part, dict) and "TableName" in part
        ]
    return names


def function_env(aws: Aws) -> dict[str, str]:
    """The environment template.yaml gives the functions, with the moto resources' names."""
    return {
        "INBOX_TABLE": aws.inbox_table,
        "STATE_TABLE": aws.state_table,
        "INBOX_QUEUE_URL": aws.queue_url,
        "INBOX_DLQ_URL": aws.dlq_url,
        "BODY_BUCKET": aws.bucket,
        "APPROVALS_TABLE": aws.names["ApprovalsTable"],
        "DECISIONS_TABLE": aws.names["DecisionsTable"],
    }


def workflow_env() -> dict[str, str]:
    """The variables the configured workflows declare, as template.yaml sets them on the worker.

    Table names are the embedded stack's, as ``Aws.names`` has them; what a worker built in a test
    needs before its workflows will register (a missing one stops it, as it stops the deployed one).
    """
    from pathlib import Path

    from lockgate.config import load_config
    from lockgate_infra.evals.rig import workflow_environment
    from lockgate_infra.local.template import load_template

    root = Path(__file__).resolve().parents[1]
    plan = LocalPlan.from_template(load_template(root / "template.yaml"))
    return workflow_environment(plan, {}, load_config(root / "lockgate.toml").workflows.packages)


class RecordingLog:
    """A Log that keeps each line's level, message and extra fields (independent of logging's config)."""

    def __init__(self) -> None:
        self.lines: list[tuple[str, str, dict[str, Any]]] = []

    def info(self, msg: str, *args: Any, **kwargs: Any) -> None:
        self.lines.append(("info", msg, dict(kwargs.get("extra") or {})))

    def warning(self, msg: str, *args: Any, **kwargs: Any) -> None:
        self.lines.append(("warning", msg, dict(kwargs.get("extra") or {})))

    def error(self, msg: str, *args: Any, **kwargs: Any) -> None:
        self.lines.append(("error", msg, dict(kwargs.get("extra") or {})))

    def exception(self, msg: str, *args: Any, **kwargs: Any) -> None:
        self.lines.append(("exception", msg, dict(kwargs.get("extra") or {})))

    def at(self, level: str) -> list[dict[str, Any]]:
        """The extra fields of every line at ``level``, with the message under "msg"."""
        return [{"msg": msg, **extra} for lvl, msg, extra in self.lines if lvl == level]


@dataclass
class Harness:
    """A receiver and a worker factory wired to moto, with a controllable clock."""

    aws: Aws
    config: LockgateConfig
    clock: FixedClock
    metrics: CountingMetrics = field(default_factory=CountingMetrics)
    router: Router = field(default_factory=Router)
    client: OnePerService = field(init=False)

    def __post_init__(self) -> None:
        self.client = OnePerService(self.aws.client)  # one client per service, shared by what it builds

    def deps(self) -> Deps:
        """The functions' surroundings on moto: these clients, the test secrets, the fixed clock."""
        return Deps(
            client=self.client,
            secrets=SecretResolver(SECRETS),
            clock=self.clock,
            log=LOG,
            metrics=self.metrics,
        )

    def receiver(self) -> Receiver:
        """The receiver as the handler builds it (lockgate.runtime.receiver)."""
        settings = ReceiverSettings.from_env(function_env(self.aws))
        return build_receiver(settings, self.config, self.deps())

    def receiver_on_secrets_manager(self, config: LockgateConfig, log: Any = LOG) -> Receiver:
        """The receiver for ``config``, reading its secrets from (moto's) Secrets Manager on this clock."""
        self.config = config
        secrets = SecretResolver({}, secretsmanager=lambda: self.client("secretsmanager"), clock=self.clock)
        deps = replace(self.deps(), secrets=secrets, log=log)
        built = build_receiver(ReceiverSettings.from_env(function_env(self.aws)), config, deps)
        built.check_secrets()  # as the handler does at cold start
        return built

    def post(
        self,
        source: str,
        body: bytes,
        headers: dict[str, str],
        *,
        base64: bool = False,
        receiver: Receiver | None = None,
    ) -> HttpResponse:
        """Send one delivery through the receiver the way the handler does."""
        import base64 as b64

        event = {
            "pathParameters": {"source": source},
            "headers": headers,
            "body": b64.b64encode(body).decode() if base64 else body.decode("utf-8", "surrogateescape"),
            "isBase64Encoded": base64,
        }
        try:
            return (receiver or self.receiver()).receive(RawRequest.from_apigw_v2(event))
        except LockgateError as exc:
            return error_response(exc)

    def worker(self, lease_seconds: int = 60) -> Worker:
        """The inbox worker as the handler builds it, for this harness's router and lease length."""
        settings = WorkerSettings.from_env(function_env(self.aws))
        return inbox_worker(settings, self.config, self.router, self.deps(), Leasing(lease_seconds))

    def store(self) -> InboxStore:
        return InboxStore(self.client("dynamodb"), self.aws.inbox_table)


def fail_calls(
    client: Any,
    operation: str,
    code: str = "InternalServerError",
    when: Callable[[dict[str, Any]], bool] | None = None,
) -> None:
    """Make every call of ``operation`` on this client fail with ``code`` before it is sent."""

    def _raise(params: dict[str, Any], **_: Any) -> None:
        if when is None or when(params):
            raise ClientError({"Error": {"Code": code, "Message": "injected fault"}}, operation)

    client.meta.events.register(f"before-call.*.{operation}", _raise)


@contextmanager
def serialized_moto() -> Iterator[None]:
    """One lock around moto's request dispatch.

    moto's conditional writes are not atomic under threads (2-4 winners of one
    conditional update, measured); serialising dispatch makes concurrency tests
    test our conditions rather than moto's races.
    """
    from moto.core.botocore_stubber import BotocoreStubber

    lock = threading.Lock()
    original = BotocoreStubber.process_request

    def locked(self: BotocoreStubber, request: Any) -> Any:
        with lock:
            return original(self, request)

    BotocoreStubber.process_request = locked  # type: ignore[method-assign]
    try:
        yield
    finally:
        BotocoreStubber.process_request = original  # type: ignore[method-assign]


def race(works: Iterable[Callable[[], object]]) -> None:
    """Start every one of ``works`` in its own thread at once, moto's dispatch serialised; wait for all."""
    threads = [threading.Thread(target=work) for work in works]
    with serialized_moto():
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()


def state_row(aws: Aws, pk: str, sk: str) -> dict[str, Any] | None:
    """One State table item, read consistently (None if absent)."""
    got = aws.client("dynamodb").get_item(
        TableName=aws.state_table, Key={"pk": {"S": pk}, "sk": {"S": sk}}, ConsistentRead=True
    )
    item: dict[str, Any] | None = got.get("Item")
    return item


def shard_rows(aws: Aws, pk: str, sk: str) -> list[dict[str, Any]]:
    """Every shard of a sharded State counter (``<pk>#s<i>`` / ``sk``) that exists."""
    items = aws.client("dynamodb").scan(TableName=aws.state_table, ConsistentRead=True)["Items"]
    shard = re.compile(rf"{re.escape(pk)}#s\d+")
    return [i for i in items if shard.fullmatch(i["pk"]["S"]) and i["sk"]["S"] == sk]


def day_spent(aws: Aws, day: str, attr: str = "spent") -> Decimal:
    """A day's spend summed over its shards (``spend#DAY#s<i>`` / ``global``): ``spent`` or another."""
    return sum(
        (Decimal(i[attr]["N"]) for i in shard_rows(aws, f"spend#{day}", "global") if attr in i), Decimal(0)
    )


def dynamodb_operations(db: Any) -> list[str]:
    """Every DynamoDB operation ``db`` sends from now on, by name, in order."""
    sent: list[str] = []
    db.meta.events.register(
        "before-send.dynamodb.*",
        lambda request, **_: sent.append(request.headers["X-Amz-Target"].decode().split(".")[-1]),
    )
    return sent


class Sleeper:
    """An injected sleep: records each wait and moves the fixed clock (no real time passes)."""

    def __init__(self, clock: FixedClock) -> None:
        self.clock = clock
        self.waits: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.clock.advance(seconds)


@contextmanager
def local_stack_in_thread(out: Any = None, **options: Any) -> Iterator[Any]:
    """`lockgate local` in a thread, as a person runs it in another terminal; yields the stack.

    ``out`` gets its console; ``options`` go to ``run_local`` (e.g. ``config_path``, ``template_path``).
    """
    import io

    from lockgate_infra.local.run import run_local

    stop, ready = threading.Event(), threading.Event()
    holder: dict[str, Any] = {}

    def on_ready(stack: Any) -> None:
        holder["stack"] = stack
        ready.set()

    kwargs = {"port": 0, "out": out or io.StringIO(), "stop": stop, "ready": on_ready, **options}
    thread = threading.Thread(target=run_local, kwargs=kwargs, daemon=True)
    thread.start()
    assert ready.wait(60), "local stack did not start"
    try:
        yield holder["stack"]
    finally:
        stop.set()
        thread.join(20)


class _ThisThreadOnly(io.TextIOBase):
    """stdout for one thread: the CLI's own output is captured; a local stack's threads, running
    in the same test process, keep writing their functions' logs where they did."""

    def __init__(self, captured: TextIO, others: TextIO) -> None:
        self._captured, self._others, self._thread = captured, others, threading.get_ident()

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        return (self._captured if threading.get_ident() == self._thread else self._others).write(text)

    def flush(self) -> None:
        self._others.flush()


def run_cli(*args: str) -> tuple[int, str]:
    """``lockgate ARGS`` in this process: (exit code, what it printed on stdout)."""
    from contextlib import redirect_stdout

    from lockgate_infra.cli import main as cli

    out = io.StringIO()
    with redirect_stdout(_ThisThreadOnly(out, sys.stdout)):
        code = cli.main(list(args))
    return code, out.getvalue()
