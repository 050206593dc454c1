"""The example shop on moto with a scripted model: the support-inbox task and the worker's loop.

Shared by the attack suite and the cost benchmarks: both run real customer emails through the
real task, loop and tools, built as the worker deploys them, and judge the effects.
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

from lockgate.agent.batches import RECHECK_SECONDS, BatchWaiting
from lockgate.agent.loop import AgentLoop
from lockgate.agent.runs import RunStore
from lockgate.agent.tasks import Task
from lockgate.clock import Clock, SystemClock
from lockgate.config import ApprovalsConfig
from lockgate.inbox.routing import InboxEvent, Router
from lockgate.jobs.builtin.collect_batches import BatchCollector
from lockgate.jobs.contract import JobContext
from lockgate.runtime.deps import Deps
from lockgate.runtime.provider import model_client
from lockgate.runtime.worker import build_agent
from lockgate.secrets import SecretResolver
from lockgate.settings import WorkerSettings
from lockgate.telemetry import CountingMetrics
from lockgate.workflows import Setup, load_workflows
from lockgate_infra.evals.models import LOG
from lockgate_infra.evals.rig import plan_and_config, seed_workflows, worker_environment

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
            log, deadline = LOG, self.clock.now() + 600
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
    sdk: Callable[[Any], Any] | None = None,
    batches: bool = False,
    approvals: ApprovalsConfig | None = None,
) -> Iterator[ShopRig]:
    """A fresh moto account with the template's resources, the shop seeded, and the worker's loop.

    The loop is built by the worker's composition root (``lockgate.runtime.worker.build_agent``)
    from the template's environment and ``lockgate.toml``, with every control it deploys with;
    only the model endpoint is the stub. ``adapt`` changes the task (e.g. its cache TTL);
    ``sdk`` wraps the SDK client (e.g. to record replies). The stub's prompt cache runs on ``clock``.
    ``batches`` also builds the collect-batches job (for a task with ``batch`` set).
    ``approvals`` wires proposals into the stack's Approvals table with these rules; without it
    a call needing a person is refused.
    """
    import boto3

    from lockgate_infra.local.fidelity import embedded_aws
    from lockgate_infra.local.provision import create_resources
    from lockgate_infra.stub import StubAnthropic

    clock = clock or SystemClock()
    log = LOG
    log.setLevel(logging.ERROR)
    with embedded_aws(), StubAnthropic(model, clock=clock) as stub:
        session: Any = boto3.session.Session(region_name="us-east-1")
        plan, config = plan_and_config()
        names = create_resources(plan, session)
        seed_workflows(config, session.client, names)
        environ = worker_environment(plan, names)
        if approvals is None:  # no Approvals tables: a call needing a person is refused
            environ.pop("APPROVALS_TABLE")
            environ.pop("DECISIONS_TABLE")
        else:
            config = dataclasses.replace(config, approvals=approvals)
        deps = Deps(session.client, SecretResolver(environ), clock, log, CountingMetrics())
        setup = Setup(Router(), environ, session.client, clock=clock, mcp_servers=config.mcp, log=log)
        load_workflows(config.workflows.packages, setup)
        task = _support_inbox(setup, cache_ttl, adapt)
        settings = WorkerSettings.from_env(environ)
        factory = _sdk_factory(stub.base_url, sdk)
        agent = build_agent(setup, settings, config, deps, model_client(settings, config, deps, factory))
        collector = None
        if batches:
            collector = BatchCollector(
                factory,
                session.client("dynamodb"),
                names["StateTable"],
                agent.runs,
                prices=agent.prices,
                log=log,
            )
        yield ShopRig(session, names, task, agent.loop, agent.runs, stub, clock, collector)


def _support_inbox(setup: Setup, cache_ttl: str | None, adapt: Callable[[Task], Task] | None) -> Task:
    """The registered support-inbox task, changed as asked (and registered so, for the loop's wiring)."""
    index = next(i for i, t in enumerate(setup.tasks) if t.name == "support-inbox")
    task = setup.tasks[index]
    if cache_ttl is not None:
        task = dataclasses.replace(task, cache_ttl=cache_ttl)
    if adapt is not None:
        task = adapt(task)
    setup.tasks[index] = task
    return task


def _sdk_factory(base_url: str, sdk: Callable[[Any], Any] | None) -> Callable[[], Any]:
    from lockgate_infra.stub.client import stub_client

    wrap = sdk or (lambda client: client)
    return lambda: wrap(stub_client(base_url))
