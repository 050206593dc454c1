"""The example shop on moto with a scripted model: the support-inbox task and the real loop.

Shared by the attack suite and the prompt-caching benchmark: both run real customer emails
through the real task, loop and tools, and judge the effects.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lockgate.actions.ledger import Ledger
from lockgate.agent.batches import RECHECK_SECONDS, Batches, BatchWaiting
from lockgate.agent.loop import AgentLoop
from lockgate.agent.runs import RunStore
from lockgate.agent.tasks import Task
from lockgate.approvals.proposals import ProposalStore
from lockgate.approvals.requests import ApprovalRequests
from lockgate.clock import Clock, SystemClock
from lockgate.config import ApprovalsConfig
from lockgate.inbox.routing import InboxEvent
from lockgate.jobs.builtin.collect_batches import BatchCollector
from lockgate.jobs.contract import JobContext
from lockgate.model.client import ModelClient
from lockgate.telemetry import CountingMetrics

ROOT = Path(__file__).resolve().parents[3]


@dataclass(frozen=True)
class Email:
    """One customer email, as the helpdesk provider delivers it."""

    sender: str
    subject: str
    text: str

    def event(self, message_id: str, received_at: int) -> InboxEvent:
        """The inbox event the worker would hand the task for this email."""
        body = json.dumps(
            {"message_id": message_id, "from": self.sender, "subject": self.subject, "text": self.text}
        ).encode()
        return InboxEvent.claimed("helpdesk", message_id, "unknown", body, received_at)


@dataclass(frozen=True)
class ShopRig:
    """A seeded shop on moto, the support-inbox task, and the loop pointed at a stub model."""

    session: Any
    names: dict[str, str]
    task: Task
    loop: AgentLoop
    runs: RunStore
    stub: Any
    clock: Clock
    collector: BatchCollector | None = None  # the collect-batches job, when batches are wired

    def answer(self, email: Email, message_id: str) -> InboxEvent:
        """Run the task for one email; returns the event it ran for.

        A step waiting in a Message Batch is handled as deployed: the recheck delay passes (on a
        clock that can be advanced), the collect job runs, and the event replays until the run ends.
        """
        event = email.event(message_id, int(self.clock.now()))
        for _ in range(2 * self.task.max_steps + 1):  # a submission and a fallback per step at most
            try:
                self.loop.run(self.task, event, self.clock.now() + 120)
                return event
            except BatchWaiting:
                if self.collector is None:
                    raise
            advance = getattr(self.clock, "advance", None)
            if advance is not None:
                advance(RECHECK_SECONDS)
            log, deadline = logging.getLogger("lockgate.shoprig"), self.clock.now() + 600
            self.collector(JobContext("collect-batches", "rig", deadline, self.clock, log, CountingMetrics()))
        raise RuntimeError(f"{message_id}: still waiting for a message batch")

    def scan(self, logical_id: str) -> list[dict[str, Any]]:
        """Every item of one of the stack's tables."""
        items: list[dict[str, Any]] = self.session.client("dynamodb").scan(TableName=self.names[logical_id])[
            "Items"
        ]
        return items


@contextmanager
def shop_rig(
    model: Callable[[dict[str, Any]], Any],
    *,
    adapt: Callable[[Task], Task] | None = None,
    cache_ttl: str | None = None,
    clock: Clock | None = None,
    controls: Callable[[Any, str, Clock], dict[str, Any]] | None = None,
    sdk: Callable[[Any], Any] | None = None,
    batches: bool = False,
    approvals: ApprovalsConfig | None = None,
) -> Iterator[ShopRig]:
    """A fresh moto account with the template's resources and the shop seeded.

    ``controls(dynamodb, state_table, clock)`` returns extra AgentLoop arguments (e.g. a response cache);
    ``sdk`` wraps the SDK client (e.g. to record replies). The stub's prompt cache runs on ``clock``.
    ``batches`` wires Message Batches and the collect job (for a task with ``batch`` set).
    ``approvals`` wires proposals into the stack's Approvals table (else a call needing a person is refused).
    """
    import boto3
    from moto import mock_aws

    from lockgate_infra.local.provision import create_resources
    from lockgate_infra.local.template import LocalPlan, load_template
    from lockgate_infra.stub import StubAnthropic

    clock = clock or SystemClock()
    log = logging.getLogger("lockgate.shoprig")
    log.setLevel(logging.ERROR)
    with mock_aws(), StubAnthropic(model, clock=clock) as stub:
        session = boto3.session.Session(region_name="us-east-1")
        names = create_resources(LocalPlan.from_template(load_template(ROOT / "template.yaml")), session)
        dynamodb = session.client("dynamodb")
        task = _shop_task(session, names, clock)
        if cache_ttl is not None:
            task = dataclasses.replace(task, cache_ttl=cache_ttl)
        if adapt is not None:
            task = adapt(task)
        model_client = _model_client(stub.base_url, clock, log, sdk)
        runs = RunStore(dynamodb, names["StateTable"], clock)
        extra = dict(controls(dynamodb, names["StateTable"], clock)) if controls else {}
        collector = None
        if batches:
            factory = _sdk_factory(stub.base_url, sdk)
            extra["batches"] = Batches(
                factory, dynamodb, names["StateTable"], runs, clock, log=log, metrics=CountingMetrics()
            )
            collector = BatchCollector(factory, dynamodb, names["StateTable"], runs, log=log)
        if approvals is not None:
            store = ProposalStore(dynamodb, names["ApprovalsTable"])
            extra["approvals"] = ApprovalRequests(store, approvals, clock, log, CountingMetrics())
        loop = AgentLoop(
            model=model_client,
            runs=runs,
            ledger=Ledger(dynamodb, names["StateTable"], clock),
            clock=clock,
            log=log,
            metrics=CountingMetrics(),
            **extra,
        )
        yield ShopRig(session, names, task, loop, runs, stub, clock, collector)


def _shop_task(session: Any, names: dict[str, str], clock: Clock) -> Task:
    """The shop seeded on the stack's tables, and its support-inbox task."""
    from shop.seed import seed
    from shop.services import ShopServices, ShopSettings
    from shop.task import support_inbox_task

    seed(session.client("dynamodb"), names["ShopOrdersTable"], ses=session.client("ses"))
    settings = ShopSettings.from_env(
        {
            "SHOP_ORDERS_TABLE": names["ShopOrdersTable"],
            "SHOP_PAYMENTS_TABLE": names["ShopPaymentsTable"],
            "SHOP_MAIL_TABLE": names["ShopMailTable"],
        }
    )
    assert settings is not None
    services = ShopServices.build(settings, session.client, clock)
    return support_inbox_task(services)


def _model_client(
    base_url: str, clock: Clock, log: logging.Logger, sdk: Callable[[Any], Any] | None
) -> ModelClient:
    return ModelClient(_sdk_factory(base_url, sdk), clock, log)


def _sdk_factory(base_url: str, sdk: Callable[[Any], Any] | None) -> Callable[[], Any]:
    import anthropic

    wrap = sdk or (lambda client: client)
    return lambda: wrap(anthropic.Anthropic(api_key="stub", base_url=base_url))
