"""Factories for the built-in jobs: their adapters built from the function's clients and names.

Each factory imports its job's module only when that job runs, so one job's import cost (or
error) never touches another.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from lockgate.jobs.contract import Job

if TYPE_CHECKING:
    from lockgate.actions.ledger import Ledger
    from lockgate.agent.tasks import Task
    from lockgate.approvals.decisions import DecisionStore
    from lockgate.approvals.proposals import ProposalStore
    from lockgate.inbox.queue import InboxQueue
    from lockgate.inbox.store import InboxStore
    from lockgate.jobs.contract import JobResources


def sweep_inbox(resources: JobResources) -> Job:
    """sweep-inbox: the inbox, its queue and dead letters."""
    from lockgate.inbox.queue import DeadLetters
    from lockgate.jobs.builtin.sweep_inbox import InboxSweep

    return InboxSweep(
        inbox=_inbox(resources),
        queue=_queue(resources),
        dead_letters=DeadLetters(resources.client("sqs"), resources.name("INBOX_DLQ_URL")),
        settings=resources.config.inbox,
    )


def expire_approvals(resources: JobResources) -> Job:
    """expire-approvals: proposals, decisions, the inbox (the expiry event), the ledger and the tasks."""
    from lockgate.jobs.builtin.expire_approvals import ApprovalExpiry

    return ApprovalExpiry(
        proposals=_proposals(resources),
        decisions=_decisions(resources),
        config=resources.config.approvals,
        inbox=_inbox(resources),
        queue=_queue(resources),
        ledger=_ledger(resources),
        tasks=_tasks(resources),
    )


def escalate_approvals(resources: JobResources) -> Job:
    """escalate-approvals: proposals (read, and their one escalation mark) and decisions (read)."""
    from lockgate.jobs.builtin.escalate_approvals import ApprovalEscalation

    return ApprovalEscalation(
        proposals=_proposals(resources), decisions=_decisions(resources), config=resources.config.approvals
    )


def reconcile_operations(resources: JobResources) -> Job:
    """reconcile-operations: the ledger, the tasks' reconcile hooks, and proposals for a person."""
    from lockgate.jobs.builtin.reconcile_operations import OperationReconciler

    return OperationReconciler(
        ledger=_ledger(resources),
        proposals=_proposals(resources),
        decisions=_decisions(resources),
        config=resources.config.approvals,
        tasks=_tasks(resources),
        inbox=_inbox(resources),
    )


def approval_digest(resources: JobResources) -> Job:
    """approval-digest: the signed digest (the link key), email, and the "sent today" marks."""
    from lockgate.approvals.desk import LinkSigner
    from lockgate.approvals.digest import ReviewDigest
    from lockgate.approvals.notify import EmailChannel
    from lockgate.jobs.builtin.approval_digest import ApprovalDigestJob, DigestMarks
    from lockgate.secrets import SecretResolver

    secrets = SecretResolver(resources.names, secretsmanager=lambda: resources.client("secretsmanager"))
    key_ref = resources.name("APPROVAL_LINK_SECRET_ARN")
    key_ref = key_ref if key_ref.startswith(("env:", "secretsmanager:")) else f"secretsmanager:{key_ref}"

    def link_secrets() -> list[bytes]:
        return [secrets.resolve(key_ref).encode()]

    base_url = resources.name("APPROVAL_BASE_URL")
    config = resources.config.approvals
    digest = ReviewDigest(
        proposals=_proposals(resources),
        decisions=_decisions(resources),
        config=config,
        signer=LinkSigner(config, link_secrets, resources.clock, base_url),
        link_secrets=link_secrets,
        clock=resources.clock,
        base_url=base_url,
        log=resources.log,
        metrics=resources.metrics,
    )
    return ApprovalDigestJob(
        digest=digest,
        config=config,
        channel=EmailChannel(resources.client("ses"), resources.name("SHOP_FROM_ADDRESS")),
        marks=DigestMarks(resources.client("dynamodb"), resources.name("STATE_TABLE")),
    )


def prune(resources: JobResources) -> Job:
    """prune: the Inbox and State tables and the retention settings."""
    from lockgate.jobs.builtin.prune import Prune

    return Prune(
        dynamodb=resources.client("dynamodb"),
        inbox_table=resources.name("INBOX_TABLE"),
        state_table=resources.name("STATE_TABLE"),
        settings=resources.config.inbox,
    )


def budget_report(resources: JobResources) -> Job:
    """budget-report: the daily usage rollup in the State table and the configured caps."""
    from lockgate.jobs.builtin.budget_report import BudgetReport

    return BudgetReport(
        dynamodb=resources.client("dynamodb"),
        state_table=resources.name("STATE_TABLE"),
        budget=resources.config.budget,
    )


def collect_batches(resources: JobResources) -> Job:
    """collect-batches: the Message Batches API (the model key), run records and the spend holds."""
    from lockgate.agent.runs import RunStore
    from lockgate.capacity.gate import Gate
    from lockgate.capacity.spend import daily_caps
    from lockgate.jobs.builtin.collect_batches import BatchCollector
    from lockgate.model.price_table import PriceTable
    from lockgate.model.sdk import sdk_factory
    from lockgate.secrets import SecretResolver

    provider = resources.config.provider
    secrets = SecretResolver(resources.names, secretsmanager=lambda: resources.client("secretsmanager"))
    # The AWS providers sign with the role; on Bedrock no batch is ever submitted, so none is polled.
    key_ref = resources.name("ANTHROPIC_API_KEY_REF") if provider.uses_api_key else None
    key = (lambda: secrets.resolve(key_ref)) if key_ref is not None else None
    dynamodb, table, budget = (
        resources.client("dynamodb"),
        resources.name("STATE_TABLE"),
        resources.config.budget,
    )
    # The holds taken at submit are settled here, to the batch price.
    spend = daily_caps(budget, dynamodb, table, resources.clock, metrics=resources.metrics, log=resources.log)
    gate = Gate(dynamodb, resources.clock, spend=spend, limiter=None) if spend is not None else None
    return BatchCollector(
        sdk_factory(provider, key, resources.names.get("ANTHROPIC_BASE_URL") or None),
        dynamodb,
        table,
        RunStore(dynamodb, table, resources.clock),
        prices=PriceTable.for_deployment(resources.config),  # as the worker priced the holds
        log=resources.log,
        gate=gate,
    )


def _inbox(resources: JobResources) -> InboxStore:
    from lockgate.inbox.store import InboxStore

    return InboxStore(resources.client("dynamodb"), resources.name("INBOX_TABLE"))


def _queue(resources: JobResources) -> InboxQueue:
    from lockgate.inbox.queue import InboxQueue

    return InboxQueue(resources.client("sqs"), resources.name("INBOX_QUEUE_URL"))


def _proposals(resources: JobResources) -> ProposalStore:
    from lockgate.approvals.proposals import ProposalStore

    return ProposalStore(resources.client("dynamodb"), resources.name("APPROVALS_TABLE"))


def _decisions(resources: JobResources) -> DecisionStore:
    from lockgate.approvals.decisions import DecisionStore

    return DecisionStore(resources.client("dynamodb"), resources.name("DECISIONS_TABLE"))


def _ledger(resources: JobResources) -> Ledger:
    from lockgate.actions.ledger import Ledger

    return Ledger(resources.client("dynamodb"), resources.name("STATE_TABLE"), resources.clock)


def _tasks(resources: JobResources) -> Mapping[str, Task]:
    """The workflows packages' tasks (for decision notices and reconcile hooks); no model is built."""
    from lockgate.inbox.routing import Router
    from lockgate.workflows import Setup, load_workflows

    # The whole environment, as the worker gives it: a workflow's variables need not look like names.
    environ = {**resources.names, **resources.environ}
    setup = Setup(
        router=Router(),
        environ=environ,
        client=resources.client,
        clock=resources.clock,
        mcp_servers=resources.config.mcp,
        log=resources.log,
        metrics=resources.metrics,
    )
    load_workflows(resources.config.workflows.packages, setup)
    return {task.name: task for task in setup.tasks}
