"""The worker's side of an approval test: a real task with refund tools, checked by ``VersionChecks``.

Tests of the approval side (the page, Slack, the CLI, the audit) store proposals by hand for tools
called ``refund_order`` and ``wire_transfer`` with an order and an amount. Deployed, an edit of such
a proposal is checked by the agent worker (over Lambda's Invoke); here the same ``VersionChecks``
the worker runs answers in process, for a task with those tools: their own argument model (an
amount of at most $500, in cents) and summary, so what is asserted is what a worker would say.
"""

from __future__ import annotations

from decimal import Decimal

from pydantic import BaseModel, Field

from lockgate.actions.tools import Risk, Tool
from lockgate.agent.tasks import Skip, Task
from lockgate.approvals.proposals import ProposalStore
from lockgate.approvals.version_checks import VersionChecks
from lockgate.config import ApprovalsConfig

MAX_AMOUNT = Decimal(500)


class Amount(BaseModel):
    """The refund tools' arguments: an order and an amount in dollars."""

    order_id: str
    amount: Decimal = Field(gt=0, le=MAX_AMOUNT, decimal_places=2)


def refund_tool(name: str) -> Tool[Amount]:
    """A tool that needs a person, with an editable amount, summarised from its real arguments."""
    return Tool(
        name=name,
        description=name,
        args=Amount,
        run=lambda args, ctx: {},
        summary=lambda a: f"{name.replace('_', ' ')} ${a.amount:.2f} on order {a.order_id}",
        risk=Risk.APPROVAL,
        editable=("amount",),
    )


def refund_task(name: str) -> Task:
    """The task the hand-made proposals name, with both tools."""
    return Task(
        name=name,
        source="helpdesk",
        event_type="email.received",
        system="-",
        tools=[refund_tool("refund_order"), refund_tool("wire_transfer")],
        start=lambda event, services: Skip("-"),
    )


def refund_worker(task: str, config: ApprovalsConfig, proposals: ProposalStore) -> VersionChecks:
    """What the worker answers about an edited version of ``task``'s proposals."""
    return VersionChecks({task: refund_task(task)}, config, proposals)
