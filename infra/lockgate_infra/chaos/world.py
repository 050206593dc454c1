"""One moto account with the template's resources, the shop seeded, and our functions composed
the way their handlers compose them: the receiver, the worker (the shop's task through the real
wiring), and the approval desk. Each function reads its own skewed clock off one shared clock,
and moto's SQS follows that clock too, so visibility timeouts, leases and backoff expire when
the harness moves time on rather than in real seconds.
"""

from __future__ import annotations

import logging
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from unittest import mock

from lockgate.approvals.decisions import DecisionStore
from lockgate.approvals.desk import ApprovalDesk
from lockgate.approvals.operator import ReviewQueue
from lockgate.approvals.proposals import ProposalStore
from lockgate.clock import Clock, FixedClock
from lockgate.config import LockgateConfig, parse_config
from lockgate.freshness import EntityVersions
from lockgate.inbox.bodies import BodyStore
from lockgate.inbox.queue import DeadLetters, InboxQueue
from lockgate.inbox.receipt import Receiver
from lockgate.inbox.routing import Router
from lockgate.inbox.store import InboxStore
from lockgate.inbox.worker import Leasing, Worker
from lockgate.runtime.worker import wire_agent_tasks
from lockgate.secrets import SecretResolver
from lockgate.telemetry import CountingMetrics, NoTracing
from lockgate.workflows import Setup
from lockgate_infra.chaos.faults import FaultPlan
from lockgate_infra.shoprig import ROOT

HELPDESK_SECRET = "whsec_Y2hhb3MtaGFybmVzcy1oZWxwZGVzay1zZWNyZXQ="  # noqa: S105 - a throwaway key for a moto account
LINK_SECRET = "chaos-harness-link-signing-secret-0123456789"  # noqa: S105 - a throwaway key for a moto account
WORKER_TIMEOUT_SECONDS = 90
LOG = logging.getLogger("lockgate.chaos")


class SkewedClock:
    """One function's view of the shared clock: off by a fixed number of seconds."""

    def __init__(self, base: Clock, offset: float) -> None:
        self._base, self.offset = base, offset

    def now(self) -> float:
        """The shared time plus this function's skew."""
        return self._base.now() + self.offset


@dataclass
class World:
    """Everything one chaos run touches."""

    session: Any
    names: dict[str, str]
    clock: FixedClock
    config: LockgateConfig
    receiver: Receiver
    workers: list[Worker]
    desk: ApprovalDesk
    review: ReviewQueue
    tasks: dict[str, Any]
    metrics: CountingMetrics = field(default_factory=CountingMetrics)
    stub: Any = None  # the model stand-in, once the account has one

    def client(self, service: str) -> Any:
        """A fresh client on the account (the harness's own reads)."""
        return self.session.client(service)

    def scan(self, logical_id: str) -> list[dict[str, Any]]:
        """Every item of one of the template's tables."""
        db, items, start = self.client("dynamodb"), [], None
        while True:
            page = db.scan(
                TableName=self.names[logical_id],
                ConsistentRead=True,
                **({"ExclusiveStartKey": start} if start else {}),
            )
            items.extend(page["Items"])
            start = page.get("LastEvaluatedKey")
            if not start:
                return items


def chaos_config() -> LockgateConfig:
    """The shipped lockgate.toml, with the helpdesk's secret from the environment."""
    raw = tomllib.loads((ROOT / "lockgate.toml").read_text(encoding="utf-8"))
    raw["sources"] = {"helpdesk": {**raw["sources"]["helpdesk"], "secrets": ["env:HELPDESK_SECRET"]}}
    return parse_config(raw)


@contextmanager
def sqs_on(clock: Clock) -> Iterator[None]:
    """moto's SQS reads time from ``clock`` (visibility timeouts, delays, retention)."""
    with (
        mock.patch("moto.sqs.models.unix_time", lambda *_: clock.now()),
        mock.patch("moto.sqs.models.unix_time_millis", lambda *_: clock.now() * 1000),
    ):
        yield


def build_world(
    session: Any, names: dict[str, str], plan: FaultPlan, stub_url: str, clock: FixedClock
) -> World:
    """Compose the functions on ``session`` (moto), each with its own clock skew."""
    config = chaos_config()
    metrics = CountingMetrics()
    environ = {
        "HELPDESK_SECRET": HELPDESK_SECRET,
        "ANTHROPIC_API_KEY": "stub",
        "ANTHROPIC_BASE_URL": stub_url,
        "APPROVALS_TABLE": names["ApprovalsTable"],
        "DECISIONS_TABLE": names["DecisionsTable"],
        "INBOX_TABLE": names["InboxTable"],
        "INBOX_QUEUE_URL": names["InboxQueue"],
        "SHOP_ORDERS_TABLE": names["ShopOrdersTable"],
        "SHOP_PAYMENTS_TABLE": names["ShopPaymentsTable"],
        "SHOP_MAIL_TABLE": names["ShopMailTable"],
    }
    dynamodb, sqs = session.client("dynamodb"), session.client("sqs")
    receiver = Receiver(
        config=config,
        secrets=SecretResolver(environ),
        inbox=InboxStore(dynamodb, names["InboxTable"]),
        queue=InboxQueue(sqs, names["InboxQueue"]),
        bodies=BodyStore(session.client("s3"), names["BodyBucket"]),
        clock=SkewedClock(clock, plan.skew()),
        log=LOG,
        metrics=metrics,
    )
    # Two worker "instances": the second is the one SQS redelivers to mid-way.
    built = [
        _worker(session, names, config, environ, SkewedClock(clock, plan.skew()), metrics) for _ in range(2)
    ]
    workers = [worker for worker, _ in built]
    desk_clock = SkewedClock(clock, plan.skew())
    proposals, decisions = (
        ProposalStore(dynamodb, names["ApprovalsTable"]),
        DecisionStore(dynamodb, names["DecisionsTable"]),
    )
    desk = ApprovalDesk(
        proposals=proposals,
        decisions=decisions,
        config=config.approvals,
        link_secrets=lambda: [LINK_SECRET.encode()],
        inbox=InboxStore(dynamodb, names["InboxTable"]),
        queue=InboxQueue(sqs, names["InboxQueue"]),
        clock=desk_clock,
        log=LOG,
        metrics=metrics,
        base_url="https://approvals.chaos/approvals",
    )
    review = ReviewQueue(proposals, decisions, config.approvals, desk_clock)
    return World(session, names, clock, config, receiver, workers, desk, review, built[0][1], metrics)


def _worker(
    session: Any,
    names: dict[str, str],
    config: LockgateConfig,
    environ: dict[str, str],
    clock: Clock,
    metrics: CountingMetrics,
) -> tuple[Worker, dict[str, Any]]:
    from shop.handlers import order_updated
    from shop.services import ShopServices, ShopSettings
    from shop.task import support_inbox_task

    router = Router()
    setup = Setup(router=router, environ=environ, client=session.client)
    # What shop.register does, with this worker's clock instead of the system's.
    router.add("partner", "order.updated", order_updated)
    settings = ShopSettings.from_env(environ)
    assert settings is not None  # noqa: S101 - the environment above names every shop table
    setup.add_task(support_inbox_task(ShopServices.build(settings, session.client, clock)))
    dynamodb, sqs = session.client("dynamodb"), session.client("sqs")
    model = wire_agent_tasks(
        setup,
        environ=environ,
        secrets=SecretResolver(environ),
        dynamodb=dynamodb,
        state_table=names["StateTable"],
        clock=clock,
        log=LOG,
        metrics=metrics,
        tracing=NoTracing(),
        approvals=config.approvals,
        sqs=sqs,
        budget=config.budget,
    )
    if model is not None:
        model._sleep = lambda seconds: None  # noqa: SLF001 - backoff waits cost no real time here
    worker = Worker(
        inbox=InboxStore(dynamodb, names["InboxTable"]),
        bodies=BodyStore(session.client("s3"), names["BodyBucket"]),
        queue=InboxQueue(sqs, names["InboxQueue"]),
        dead_letters=DeadLetters(sqs, names["InboxDLQ"]),
        router=router,
        versions=EntityVersions(dynamodb, names["StateTable"], clock),
        settings=config.inbox,
        leasing=Leasing.for_timeout(WORKER_TIMEOUT_SECONDS),
        clock=clock,
        log=LOG,
        metrics=metrics,
    )
    return worker, {task.name: task for task in setup.tasks}
