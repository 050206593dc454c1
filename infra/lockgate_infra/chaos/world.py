"""One moto account with the template's resources, the shop seeded, and our functions built by
their runtimes (``lockgate.runtime``), as the handlers build them: the receiver, the worker (the
workflows packages registered, capacity controls as configured), and the approval desk. Each
function reads its own skewed clock off one shared clock, and moto's SQS follows that clock too,
so visibility timeouts, leases and backoff expire when the harness moves time on rather than in
real seconds.
"""

from __future__ import annotations

import logging
import tomllib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from unittest import mock

from lockgate.approvals.decisions import DecisionStore
from lockgate.approvals.desk import ApprovalDesk
from lockgate.approvals.proposals import ProposalStore
from lockgate.approvals.review_queue import ReviewQueue
from lockgate.clock import Clock, FixedClock
from lockgate.config import LockgateConfig, parse_config
from lockgate.dynamo import read_all
from lockgate.inbox.receipt import Receiver
from lockgate.inbox.worker import Worker
from lockgate.runtime.approvals import build_approvals
from lockgate.runtime.deps import Deps
from lockgate.runtime.receiver import build_receiver
from lockgate.runtime.worker import build_worker
from lockgate.secrets import SecretResolver
from lockgate.settings import ApprovalSettings, ReceiverSettings, WorkerSettings
from lockgate.telemetry import CountingMetrics
from lockgate_infra.chaos.faults import FaultPlan
from lockgate_infra.evals.shoprig import ROOT

HELPDESK_SECRET = "whsec_Y2hhb3MtaGFybmVzcy1oZWxwZGVzay1zZWNyZXQ="  # noqa: S105 - a throwaway key for a moto account
TICKETS_SECRET = "whsec_Y2hhb3MtaGFybmVzcy10aWNrZXRzLXNlY3JldA=="  # noqa: S105 - a throwaway key for a moto account
SOURCE_SECRETS = {"helpdesk": HELPDESK_SECRET, "tickets": TICKETS_SECRET}  # the sources a run sends to
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
    mcp: Any = None  # the example MCP server the tickets workflow calls (McpExample), in an MCP run

    def client(self, service: str) -> Any:
        """A fresh client on the account (the harness's own reads)."""
        return self.session.client(service)

    def scan(self, logical_id: str) -> list[dict[str, Any]]:
        """Every item of one of the template's tables."""
        return read_all(self.client("dynamodb").scan, TableName=self.names[logical_id], ConsistentRead=True)


def chaos_config(tickets: Mapping[str, Any] | None = None) -> LockgateConfig:
    """The shipped lockgate.toml, its helpdesk's and tickets' secrets from the environment.

    ``tickets`` changes settings of ``[mcp.servers.tickets]`` (a run's timeouts, protocol,
    credential) and of its tools' tables (``{"tools": {"issue_credit": {...}}}``).
    """
    raw = tomllib.loads((ROOT / "lockgate.toml").read_text(encoding="utf-8"))
    raw["sources"] = {
        name: {**raw["sources"][name], "secrets": [f"env:{name.upper()}_SECRET"]} for name in SOURCE_SECRETS
    }
    servers = raw["mcp"]["servers"]
    servers["tickets"] = _merged(servers["tickets"], tickets or {})
    return parse_config(raw)


def _merged(base: Mapping[str, Any], changes: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in changes.items():
        old = merged.get(key)
        merged[key] = _merged(old, value) if isinstance(old, dict) and isinstance(value, dict) else value
    return merged


@contextmanager
def sqs_on(clock: Clock) -> Iterator[None]:
    """moto's SQS reads time from ``clock`` (visibility timeouts, delays, retention)."""
    with (
        mock.patch("moto.sqs.models.unix_time", lambda *_: clock.now()),
        mock.patch("moto.sqs.models.unix_time_millis", lambda *_: clock.now() * 1000),
    ):
        yield


def functions_environment(
    names: Mapping[str, str], stub_url: str, workflows: Mapping[str, str]
) -> dict[str, str]:
    """Every variable the functions read, on this account (one environment for all of them)."""
    return {
        **workflows,
        "HELPDESK_SECRET": HELPDESK_SECRET,
        "TICKETS_SECRET": TICKETS_SECRET,
        "LINK_SECRET": LINK_SECRET,
        "ANTHROPIC_API_KEY": "stub",
        "ANTHROPIC_BASE_URL": stub_url,
        "APPROVAL_LINK_SECRET_ARN": "env:LINK_SECRET",
        "APPROVAL_BASE_URL": "https://approvals.chaos/approvals",
        "APPROVALS_TABLE": names["ApprovalsTable"],
        "DECISIONS_TABLE": names["DecisionsTable"],
        "INBOX_TABLE": names["InboxTable"],
        "INBOX_QUEUE_URL": names["InboxQueue"],
        "INBOX_DLQ_URL": names["InboxDLQ"],
        "STATE_TABLE": names["StateTable"],
        "BODY_BUCKET": names["BodyBucket"],
        "WORKER_TIMEOUT_SECONDS": str(WORKER_TIMEOUT_SECONDS),
    }


def build_world(
    session: Any,
    names: dict[str, str],
    plan: FaultPlan,
    stub_url: str,
    clock: FixedClock,
    workflows: Mapping[str, str],
    config: LockgateConfig | None = None,
) -> World:
    """Compose the functions on ``session`` (moto) through their runtimes, each with its own clock skew.

    ``workflows``: the variables the workflows read (``rig.workflow_environment``), as deployed, and
    any the run adds (its MCP server's address and token); ``config``: ``chaos_config()`` by default.
    """
    config, metrics = config or chaos_config(), CountingMetrics()
    environ = functions_environment(names, stub_url, workflows)

    def deps(skew: float) -> Deps:
        # Backoff waits cost no real time here: the harness moves the shared clock instead.
        return Deps(
            client=session.client,
            secrets=SecretResolver(environ),
            clock=SkewedClock(clock, skew),
            log=LOG,
            metrics=metrics,
            sleep=lambda seconds: None,
        )

    receiver = build_receiver(ReceiverSettings.from_env(environ), config, deps(plan.skew()))
    # Two worker "instances": the second is the one SQS redelivers to mid-way.
    settings = WorkerSettings.from_env(environ)
    built = [build_worker(settings, config, deps(plan.skew()), environ) for _ in range(2)]
    desk_deps = deps(plan.skew())
    # The worker's own check of an edited version, asked in-process (deployed: a direct invocation).
    checks = built[0].checks
    desk = build_approvals(ApprovalSettings.from_env(environ), config, desk_deps, checks).desk
    assert desk is not None  # noqa: S101 - the environment above gives the callback its tables
    dynamodb = session.client("dynamodb")
    review = ReviewQueue(
        ProposalStore(dynamodb, names["ApprovalsTable"]),
        DecisionStore(dynamodb, names["DecisionsTable"]),
        config.approvals,
        desk_deps.clock,
    )
    workers = [parts.worker for parts in built]
    tasks = dict(built[0].tasks)
    return World(session, names, clock, config, receiver, workers, desk, review, tasks, metrics)
