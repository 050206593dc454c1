"""The agent worker's object graph, built here and nowhere else.

The handler, the tests, the chaos harness, the cost meter and the local stack all call
``build_worker`` with the function's settings, its clients and a clock, so what they run is what
deploys: the workflows packages registered, every task routed through one guarded agent loop with
the configured capacity controls, approvals wired in when the function has their tables.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lockgate.actions.ledger import Ledger
from lockgate.actions.responses import EVENT_TYPE, SOURCE
from lockgate.agent.batches import Batches
from lockgate.agent.handler import route_tasks
from lockgate.agent.loop import AgentLoop
from lockgate.agent.resume import DecisionResponses, StoredEvents
from lockgate.agent.runs import RunStore
from lockgate.agent.screen import Screener
from lockgate.agent.tasks import Task, require_priced_models
from lockgate.approvals.decisions import DecisionStore
from lockgate.approvals.events import VetoTimer
from lockgate.approvals.executor import ApprovalExecutor
from lockgate.approvals.limits import PendingLimits
from lockgate.approvals.proposals import ProposalStore
from lockgate.approvals.requests import ApprovalRequests
from lockgate.approvals.rule_checks import require_valid_rules
from lockgate.approvals.version_checks import VersionChecks
from lockgate.capacity.breaker import CircuitBreaker
from lockgate.capacity.gate import Gate
from lockgate.capacity.ratelimit import RateLimiter
from lockgate.capacity.spend import daily_caps
from lockgate.config import LockgateConfig
from lockgate.freshness import EntityVersions
from lockgate.inbox.bodies import BodyStore
from lockgate.inbox.queue import DeadLetters, InboxQueue
from lockgate.inbox.routing import Router
from lockgate.inbox.store import InboxStore
from lockgate.inbox.worker import Leasing, Worker
from lockgate.model.client import ModelClient
from lockgate.model.price_table import PriceTable
from lockgate.model.providers import provider as provider_named
from lockgate.model.response_cache import ResponseCache
from lockgate.model.usage import UsageRollup
from lockgate.restore import RestoreHooks
from lockgate.runtime.deps import Deps
from lockgate.runtime.provider import model_client, require_provider
from lockgate.settings import WorkerSettings
from lockgate.workflows import Setup, load_workflows

if TYPE_CHECKING:
    pass


# How late this process may see a circuit another Lambda opened (lockgate.capacity.breaker).
BREAKER_CACHE_SECONDS = 5.0


@dataclass(frozen=True)
class WorkerParts:
    """What the worker function runs: the worker, its tasks, the model client and the restore hooks."""

    worker: Worker
    router: Router
    tasks: Mapping[str, Task]
    model: ModelClient | None
    restore: RestoreHooks
    # The approval side's question about an edited version (a direct invocation); None without approvals.
    checks: VersionChecks | None = None


def build_worker(
    settings: WorkerSettings, config: LockgateConfig, deps: Deps, environ: Mapping[str, str]
) -> WorkerParts:
    """The worker for ``settings``: the workflows packages loaded (they read their names from ``environ``).

    A workflow whose declared resource has no variable in ``environ`` stops it here (ConfigError).
    """
    router = Router()
    setup = Setup(
        router=router,
        environ=environ,
        client=deps.client,
        clock=deps.clock,
        mcp_servers=config.mcp,
        secrets=deps.secrets,
        log=deps.log,
        metrics=deps.metrics,
    )
    load_workflows(config.workflows.packages, setup)
    require_valid_rules(config.approvals, setup.tasks)  # a rule that cannot hold stops it here
    model = agent_tasks(setup, settings, config, deps)
    worker = inbox_worker(settings, config, router, deps)
    # SnapStart: every environment restored from the snapshot reseeds its jitter and drops the
    # model SDK client and cached secrets (boto3 clients reconnect by themselves).
    restore = RestoreHooks(rngs=[worker.rng], refreshers=[deps.secrets.forget])
    if model is not None:
        restore.add(rngs=[model.rng], refreshers=[model.refresh])
    tasks = {task.name: task for task in setup.tasks}
    proposals = ProposalStore(deps.client("dynamodb"), settings.approvals_table or "")
    checks = VersionChecks(tasks, config.approvals, proposals)  # the approval side asks it about edits
    return WorkerParts(worker, router, tasks, model, restore, checks if settings.approvals_table else None)


def inbox_worker(
    settings: WorkerSettings,
    config: LockgateConfig,
    router: Router,
    deps: Deps,
    leasing: Leasing | None = None,
) -> Worker:
    """The inbox side: claim each delivery under a lease, route it, record the outcome."""
    dynamodb, sqs = deps.client("dynamodb"), deps.client("sqs")
    return Worker(
        inbox=InboxStore(dynamodb, settings.inbox_table),
        bodies=BodyStore(deps.client("s3"), settings.body_bucket),
        queue=InboxQueue(sqs, settings.inbox_queue_url),
        dead_letters=DeadLetters(sqs, settings.inbox_dlq_url),
        router=router,
        versions=EntityVersions(dynamodb, settings.state_table, deps.clock),
        settings=config.inbox,
        leasing=leasing or Leasing.for_timeout(settings.timeout_seconds),
        clock=deps.clock,
        log=deps.log,
        metrics=deps.metrics,
    )


@dataclass(frozen=True)
class AgentParts:
    """The guarded agent loop as deployed, and the parts a harness reads back (runs, batches, prices)."""

    loop: AgentLoop
    model: ModelClient
    runs: RunStore
    batches: Batches | None
    prices: PriceTable


def agent_tasks(
    setup: Setup, settings: WorkerSettings, config: LockgateConfig, deps: Deps
) -> ModelClient | None:
    """Route every registered task through one agent loop; returns its model client (for refresh)."""
    if not setup.tasks:
        return None
    agent = build_agent(setup, settings, config, deps)
    route_tasks(setup.router, setup.tasks, agent.loop, deps.clock)
    # A person's decision goes back to the run that proposed the call (Task.respond).
    started = StoredEvents(
        InboxStore(deps.client("dynamodb"), settings.inbox_table),
        BodyStore(deps.client("s3"), settings.body_bucket),
    )
    ledger = Ledger(deps.client("dynamodb"), settings.state_table, deps.clock)  # on_decision, once
    responses = DecisionResponses(
        setup.tasks, agent.loop, agent.runs, started, deps.clock, deps.log, deps.metrics, ledger
    )
    setup.router.add(SOURCE, EVENT_TYPE, responses)
    return agent.model


def build_agent(
    setup: Setup,
    settings: WorkerSettings,
    config: LockgateConfig,
    deps: Deps,
    model: ModelClient | None = None,
) -> AgentParts:
    """The agent loop for ``setup``'s tasks with every control the worker deploys with.

    ``model`` replaces the deployed model client (the eval rig's, whose failures stop the eval).
    ConfigError when a task or ``[capacity.models]`` names a model id without a price.
    """
    require_provider(setup, settings, config)
    prices = PriceTable.for_deployment(config)
    require_priced_models(setup.tasks, prices, setup.workflow_of)
    capacity, budget = config.capacity, settings.budget(config.budget)
    dynamodb, table, clock = deps.client("dynamodb"), settings.state_table, deps.clock
    model = model or model_client(settings, config, deps)
    ledger = Ledger(dynamodb, table, clock)
    shards = capacity.shards  # every shared counter spread over this many keys (lockgate.shards)
    spend = daily_caps(budget, dynamodb, table, clock, metrics=deps.metrics, log=deps.log, shards=shards)
    # Budget holds and rate buckets: one DynamoDB write before each call, one after.
    limiter = RateLimiter.configured(capacity, dynamodb, table, clock, deps.metrics, deps.log)
    gate = Gate(dynamodb, clock, spend=spend, limiter=limiter)
    runs = RunStore(dynamodb, table, clock)
    usage = deps.usage_metrics(frozenset(t.name for t in setup.tasks)) if deps.usage_metrics else None
    batches = message_batches(setup, model, runs, settings, deps, prices=prices, gate=gate)
    loop = AgentLoop(
        model=model,
        prices=prices,
        runs=runs,
        ledger=ledger,
        clock=clock,
        log=deps.log,
        metrics=deps.metrics,
        screener=Screener(clock),
        approvals=approvals(setup, settings, config, ledger, deps),
        # An outage is not hammered: after repeated endpoint failures calls wait, then one probes.
        # A closed read is trusted for BREAKER_CACHE_SECONDS: one read per few calls, not per call.
        breaker=CircuitBreaker(
            dynamodb,
            table,
            clock,
            closed_cache_seconds=BREAKER_CACHE_SECONDS,
            metrics=deps.metrics,
            log=deps.log,
        ),
        # Cost controls: saved answers for cacheable tasks, a daily rollup per run, batches.
        responses=ResponseCache(dynamodb, table, clock, log=deps.log, metrics=deps.metrics),
        batches=batches,
        rollup=UsageRollup(dynamodb, table, clock, log=deps.log, metrics=deps.metrics, shards=shards),
        usage_metrics=usage,
        gate=gate,
        count_tokens=capacity.count_tokens,
        calls_ahead=capacity.calls_per_admission,
        rules=config.approvals,
    )
    return AgentParts(loop, model, runs, batches, prices)


def message_batches(
    setup: Setup,
    model: ModelClient,
    runs: RunStore,
    settings: WorkerSettings,
    deps: Deps,
    *,
    prices: PriceTable,
    gate: Gate,
) -> Batches | None:
    """Half-price Message Batches for the tasks that batch a step; None when no task does, or where
    the provider has none (Bedrock: such steps call directly, docs/providers.md "Batches")."""
    if not any(t.batch for t in setup.tasks) or not provider_named(prices.provider).message_batches:
        return None
    return Batches(
        model.sdk_factory,
        deps.client("dynamodb"),
        settings.state_table,
        runs,
        deps.clock,
        prices=prices,
        log=deps.log,
        metrics=deps.metrics,
        gate=gate,
    )


def approvals(
    setup: Setup, settings: WorkerSettings, config: LockgateConfig, ledger: Ledger, deps: Deps
) -> ApprovalRequests | None:
    """Proposals for the loop, and the executor for decided ones; None without the approval tables."""
    if not (settings.approvals_table and settings.decisions_table):
        return None
    dynamodb = deps.client("dynamodb")
    proposals = ProposalStore(dynamodb, settings.approvals_table)
    inbox = InboxStore(dynamodb, settings.inbox_table)
    queue = InboxQueue(deps.client("sqs"), settings.inbox_queue_url)
    veto = VetoTimer(inbox, queue, deps.log)
    limits = PendingLimits(
        dynamodb, settings.approvals_table, settings.state_table, config.approvals, config.capacity.shards
    )
    requests = ApprovalRequests(
        config.approvals, deps.clock, deps.log, deps.metrics, limits=limits, veto_timer=veto
    )
    # Decided proposals come back as inbox events; the executor re-checks, then runs once.
    executor = ApprovalExecutor(
        proposals=proposals,
        decisions=DecisionStore(dynamodb, settings.decisions_table),
        tasks={t.name: t for t in setup.tasks},
        ledger=ledger,
        config=config.approvals,
        clock=deps.clock,
        log=deps.log,
        metrics=deps.metrics,
        limits=limits,
        inbox=inbox,  # a task with ``respond`` hears rejections and edits in its run
        queue=queue,
    )
    setup.router.add("approval", "*", executor)
    return requests
