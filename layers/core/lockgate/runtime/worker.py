"""The agent worker's object graph: every task routed through one guarded agent loop, approvals wired in."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lockgate.actions.ledger import Ledger
from lockgate.agent.batches import Batches
from lockgate.agent.handler import route_tasks
from lockgate.agent.loop import AgentLoop
from lockgate.agent.runs import RunStore
from lockgate.agent.screen import Screener
from lockgate.approvals.decisions import DecisionStore
from lockgate.approvals.events import VetoTimer
from lockgate.approvals.executor import ApprovalExecutor
from lockgate.approvals.proposals import ProposalStore
from lockgate.approvals.requests import ApprovalRequests
from lockgate.capacity.breaker import CircuitBreaker
from lockgate.capacity.gate import Gate
from lockgate.capacity.ratelimit import Bucket, RateLimiter
from lockgate.capacity.spend import SpendCaps
from lockgate.clock import Clock
from lockgate.config import ApprovalsConfig, BudgetConfig, CapacityConfig
from lockgate.inbox.queue import InboxQueue
from lockgate.inbox.store import InboxStore
from lockgate.model.client import ModelClient
from lockgate.model.response_cache import ResponseCache
from lockgate.model.retrybudget import RetryBudget
from lockgate.model.sdk import anthropic_factory
from lockgate.model.usage import UsageMetrics, UsageRollup
from lockgate.secrets import SecretResolver
from lockgate.telemetry import Log, Metrics, Tracing
from lockgate.workflows import Setup


def wire_agent_tasks(
    setup: Setup,
    *,
    environ: Mapping[str, str],
    secrets: SecretResolver,
    dynamodb: Any,
    state_table: str,
    clock: Clock,
    log: Log,
    metrics: Metrics,
    tracing: Tracing,
    approvals: ApprovalsConfig | None = None,
    sqs: Any = None,
    budget: BudgetConfig | None = None,
    usage_metrics: UsageMetrics | None = None,
    capacity: CapacityConfig | None = None,
) -> ModelClient | None:
    """Route every registered task through one agent loop; returns its model client (for refresh)."""
    if not setup.tasks:
        return None
    capacity = capacity or CapacityConfig()
    key_ref = environ.get("ANTHROPIC_API_KEY_REF", "env:ANTHROPIC_API_KEY")
    sdk = anthropic_factory(lambda: secrets.resolve(key_ref), environ.get("ANTHROPIC_BASE_URL") or None)
    model = ModelClient(
        sdk,
        clock,
        log,
        tracing,
        # One budget per process, shared by every task it runs (see lockgate.model.client); the
        # floor lets a quiet process still retry a few times a minute.
        retry_budget=RetryBudget(capacity.retry_budget_ratio, min_retries_per_minute=10, clock=clock),
        metrics=metrics,
    )
    ledger = Ledger(dynamodb, state_table, clock)
    approvals_table, decisions_table = environ.get("APPROVALS_TABLE"), environ.get("DECISIONS_TABLE")
    requests = None
    if approvals is not None and approvals_table and decisions_table:
        proposals = ProposalStore(dynamodb, approvals_table)
        veto = None
        if sqs is not None and environ.get("INBOX_TABLE") and environ.get("INBOX_QUEUE_URL"):
            veto = VetoTimer(
                InboxStore(dynamodb, environ["INBOX_TABLE"]), InboxQueue(sqs, environ["INBOX_QUEUE_URL"]), log
            )
        requests = ApprovalRequests(proposals, approvals, clock, log, metrics, veto_timer=veto)
        # Decided proposals come back as inbox events; the executor re-checks, then runs once.
        executor = ApprovalExecutor(
            proposals=proposals,
            decisions=DecisionStore(dynamodb, decisions_table),
            tasks={t.name: t for t in setup.tasks},
            ledger=ledger,
            config=approvals,
            clock=clock,
            log=log,
            metrics=metrics,
        )
        setup.router.add("approval", "*", executor)
    spend = None
    if budget is not None and budget.daily_usd is not None:
        spend = SpendCaps(
            dynamodb,
            state_table,
            clock,
            global_cap_usd=budget.daily_usd,
            task_caps=budget.tasks,
            metrics=metrics,
            log=log,
        )
    runs = RunStore(dynamodb, state_table, clock)
    batches = None
    if any(t.batch for t in setup.tasks):
        batches = Batches(sdk, dynamodb, state_table, runs, clock, log=log, metrics=metrics, spend=spend)
    loop = AgentLoop(
        model=model,
        runs=runs,
        ledger=ledger,
        clock=clock,
        log=log,
        metrics=metrics,
        tracing=tracing,
        screener=Screener(clock),
        approvals=requests,
        # An outage is not hammered: after repeated endpoint failures calls wait, then one probes.
        breaker=CircuitBreaker(dynamodb, state_table, clock, metrics=metrics, log=log),
        # Cost controls: saved answers for cacheable tasks, a daily rollup per run, batches.
        responses=ResponseCache(dynamodb, state_table, clock, log=log, metrics=metrics),
        batches=batches,
        rollup=UsageRollup(dynamodb, state_table, clock, log=log, metrics=metrics),
        usage_metrics=usage_metrics,
        # Budget holds and rate buckets: one DynamoDB write before each call, one after.
        gate=Gate(
            dynamodb,
            clock,
            spend=spend,
            limiter=rate_limiter(capacity, dynamodb, state_table, clock, metrics, log),
        ),
        count_tokens=capacity.count_tokens,
    )
    route_tasks(setup.router, setup.tasks, loop, clock)
    return model


def rate_limiter(
    capacity: CapacityConfig, dynamodb: Any, state_table: str, clock: Clock, metrics: Metrics, log: Log
) -> RateLimiter | None:
    """The shared rate buckets from ``[capacity]`` (``model#<id>``, ``source#<name>``); None without any."""
    limits = {
        f"{kind}#{name}": Bucket(limit.requests_per_minute, limit.tokens_per_minute)
        for kind, table in (("model", capacity.models), ("source", capacity.sources))
        for name, limit in table.items()
    }
    if not limits:
        return None
    return RateLimiter(
        dynamodb,
        state_table,
        clock,
        limits=limits,
        metrics=metrics,
        log=log,
        fallback_per_minute=capacity.fallback_requests_per_minute,
    )
