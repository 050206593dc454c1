"""The refund summary: a task on a schedule (every weekday 06:17 UTC, see lockgate.toml [schedules]).

The scheduled_jobs function enqueues ``schedule#refund-summary#<time>``; the worker routes it here
(source ``schedule``, event type ``refund-summary``). The agent reads yesterday's refunds with a
read-only tool and emails the owner through the same SES path as customer replies (ledger and
sent-mail record: one email per occurrence, whatever is retried).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, date, datetime, timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from lockgate import (
    BadDelivery,
    InboxEvent,
    Risk,
    RunFacts,
    Start,
    Task,
    Tool,
    ToolContext,
    ToolError,
    Verdict,
    describe_validation_error,
)
from shop.arguments import Args, SendEmailArgs
from shop.policies import links_only_to_shop
from shop.replies import send_email
from shop.services import ShopServices, shop_services

NAME = "refund-summary"
LOOKBACK_DAYS = 31

SYSTEM = """\
You write the daily refund summary for the owner of Example Shop, a small online shop.

1. Call list_refunds for the day named in the task message.
2. Email the owner (the address in the task message) once with email_owner: the subject
   "Refunds on <day>", then the number of refunds and their total, then one line per refund
   (order, amount, reason). If there were none, say so in one line.

Use only what list_refunds returned; never invent refunds. Be brief and factual."""


class ScheduleTick(BaseModel):
    """The body of a schedule event."""

    model_config = ConfigDict(extra="ignore")

    schedule: str
    scheduled_time: datetime


class ListRefundsArgs(Args):
    """list_refunds' arguments."""

    day: date  # YYYY-MM-DD (UTC)


def list_refunds(args: ListRefundsArgs, context: ToolContext) -> dict[str, Any]:
    """The refunds made on one UTC day, with their count and total."""
    shop = shop_services(context.services)
    today = datetime.fromtimestamp(shop.clock.now(), UTC).date()
    if not timedelta(0) <= today - args.day <= timedelta(days=LOOKBACK_DAYS):
        raise ToolError(f"list_refunds covers the last {LOOKBACK_DAYS} days, up to today ({today}).")
    start = int(datetime.combine(args.day, datetime.min.time(), UTC).timestamp())
    refunds = shop.payments.refunds_between(start, start + 86_400)
    return {
        "day": args.day.isoformat(),
        "count": len(refunds),
        "total": f"{sum((r.amount for r in refunds), start=0):.2f}",
        "refunds": [
            {"order_id": r.order_id, "amount": f"{r.amount:.2f}", "currency": r.currency, "reason": r.reason}
            for r in refunds
        ],
    }


def only_to_owner(args: Any, facts: RunFacts) -> Verdict:
    """The summary goes to the shop's owner and nobody else."""
    owner = str(facts.get("owner_email", ""))
    if not owner or args.to.strip().lower() != owner:
        return Verdict.deny(f"the summary can only be sent to the owner ({owner or 'not configured'})")
    return Verdict.allow()


LIST_REFUNDS: Tool[ListRefundsArgs] = Tool(
    name="list_refunds",
    description="List the refunds made on one day (UTC, YYYY-MM-DD): count, total, and each refund.",
    args=ListRefundsArgs,
    run=list_refunds,
    summary=lambda a: f"list the refunds of {a.day.isoformat()}",
    risk=Risk.READ,
)


def email_owner_tool(services: ShopServices) -> Tool[SendEmailArgs]:
    """send_email's SES path, for the owner only."""
    settings = services.settings
    return Tool(
        name="email_owner",
        description="Send the plain-text summary email to the shop's owner (only their address is accepted).",
        args=SendEmailArgs,
        run=send_email,
        summary=lambda a: f"email the owner {a.to}: {a.subject[:80]!r}",
        risk=Risk.ACT,
        policies=(only_to_owner, links_only_to_shop(settings.host, settings.from_address)),
        needs_person_when_tainted=False,  # reads only our own payments table
    )


def start(event: InboxEvent, services: Mapping[str, Any]) -> Start:
    """The day before the scheduled time is the day summarised; the owner's address is a fact."""
    shop = shop_services(services)
    try:
        tick = ScheduleTick.model_validate(event.json())
    except ValidationError as exc:
        raise BadDelivery(f"schedule event: {describe_validation_error(exc)}") from exc
    day = (tick.scheduled_time.astimezone(UTC) - timedelta(days=1)).date().isoformat()
    owner = shop.settings.owner_address
    prompt = (
        f"Scheduled task refund-summary at {tick.scheduled_time.astimezone(UTC):%Y-%m-%dT%H:%M:%SZ}: "
        f"summarise the refunds of {day} (UTC) for the owner, {owner}."
    )
    return Start(prompt=prompt, facts=RunFacts(values={"owner_email": owner, "day": day}))


def refund_summary_task(services: ShopServices) -> Task:
    """The scheduled refund summary, wired to the shop's services."""
    return Task(
        name=NAME,
        source="schedule",
        event_type=NAME,
        system=SYSTEM,
        tools=(LIST_REFUNDS, email_owner_tool(services)),
        start=start,
        model="claude-haiku-4-5",
        max_steps=4,
        max_output_tokens=1024,
        budget_usd=0.10,
        services={"shop": services},
    )
