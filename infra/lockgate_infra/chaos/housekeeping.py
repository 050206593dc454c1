"""The scheduled jobs a chaos run drives (the sweep, approval expiry, reconciliation), and the
reviewer's truthful answer to a "did this happen?" question, read from the downstream systems.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from lockgate.actions.ledger import Ledger
from lockgate.approvals.decisions import DecisionStore
from lockgate.approvals.proposals import Proposal, ProposalStore
from lockgate.inbox.queue import DeadLetters, InboxQueue
from lockgate.inbox.store import InboxStore
from lockgate.jobs.builtin.expire_approvals import ApprovalExpiry
from lockgate.jobs.builtin.reconcile_operations import OperationReconciler
from lockgate.jobs.builtin.sweep_inbox import InboxSweep
from lockgate.jobs.contract import Job, JobContext
from lockgate_infra.chaos.faults import FaultPlan
from lockgate_infra.chaos.world import LOG, World

JOB_SECONDS = 60  # each run's deadline, like a short scheduled function


def housekeeping(world: World) -> list[Callable[[World, FaultPlan], None]]:
    """The jobs, built on the world's account the way the scheduled function builds them."""
    db, sqs, names = world.client("dynamodb"), world.client("sqs"), world.names
    inbox, queue = InboxStore(db, names["InboxTable"]), InboxQueue(sqs, names["InboxQueue"])
    proposals, decisions = (
        ProposalStore(db, names["ApprovalsTable"]),
        DecisionStore(db, names["DecisionsTable"]),
    )
    ledger = Ledger(db, names["StateTable"], world.clock)
    approvals = world.config.approvals
    jobs: dict[str, Job] = {
        "sweep-inbox": InboxSweep(
            inbox=inbox,
            queue=queue,
            dead_letters=DeadLetters(sqs, names["InboxDLQ"]),
            settings=world.config.inbox,
        ),
        "expire-approvals": ApprovalExpiry(
            proposals=proposals,
            decisions=decisions,
            config=approvals,
            inbox=inbox,
            queue=queue,
            ledger=ledger,
            tasks=world.tasks,
        ),
        "reconcile-operations": OperationReconciler(
            ledger=ledger, proposals=proposals, decisions=decisions, config=approvals, tasks=world.tasks
        ),
    }
    return [_runner(name, job) for name, job in jobs.items()]


def _runner(name: str, job: Job) -> Callable[[World, FaultPlan], None]:
    cursors: dict[str, Any] = {}

    def run(world: World, plan: FaultPlan) -> None:
        now = world.clock.now()
        ctx = JobContext(
            name=name,
            scheduled_time=dt.datetime.fromtimestamp(now, dt.UTC).isoformat(),
            deadline=now + JOB_SECONDS,
            clock=world.clock,
            log=LOG,
            metrics=world.metrics,
            cursor=cursors.get(name),
        )
        result = job(ctx)
        cursors[name] = None if result.done else result.cursor

    return run


def happened(world: World, proposal: Proposal) -> bool:
    """The truth about an operation a person is asked about, from the payments, mail and SES records,
    and the MCP server's own record of what it did under each key."""
    from moto.core.models import DEFAULT_ACCOUNT_ID
    from moto.ses.models import ses_backends

    key = str(proposal.args.get("idempotency_key", ""))
    if world.mcp is not None and world.mcp.desk.acted(key):
        return True
    db = world.client("dynamodb")
    payment = db.get_item(TableName=world.names["ShopPaymentsTable"], Key={"idempotency_key": {"S": key}})
    if "Item" in payment:
        return True
    mail = db.get_item(TableName=world.names["ShopMailTable"], Key={"message_id": {"S": f"sent#{key}"}}).get(
        "Item"
    )
    if mail is None:
        return False
    to, subject = mail.get("to", {}).get("S"), mail.get("subject", {}).get("S")
    return any(
        to in message.destinations.get("ToAddresses", []) and message.subject == subject
        for message in ses_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].sent_messages
    )
