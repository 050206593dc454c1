"""Before the agent acts: the customer's request, read out of the email with structured output.

A cheap model reads it first; the larger model is asked when the cheap one gives up or names an
order the shop does not have (a misread number). When neither manages, the run ends as
``needs_person`` and the email waits for the team instead of getting a guessed answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from lockgate import InboxEvent, Intake, values_in_source
from shop.helpdesk import parse_email
from shop.services import shop_services

CHEAP_MODEL = "claude-haiku-5-5"
ESCALATION_MODEL = "claude-sonnet-5-5"

INSTRUCTIONS = """\
Read one customer email to a small online shop and say what the customer wants.
order_id: the order number as written in the email (like A-1042), or null if none is named.
intent: refund (money back, broken or damaged items), return, where_is_my_order (shipping,
tracking, late delivery), or question (anything else).
amount: the dollar amount the customer asks for, digits only (like 80.00), or null."""


class CustomerRequest(BaseModel):
    """What the customer asks for."""

    model_config = ConfigDict(extra="forbid")

    order_id: str | None = Field(default=None, pattern=r"^A-\d{4}$")
    intent: Literal["refund", "return", "where_is_my_order", "question"]
    amount: Decimal | None = Field(default=None, ge=0, le=100_000, decimal_places=2)


def email_text(event: InboxEvent, services: Mapping[str, Any]) -> str:
    """The email's subject and text: what the request is read from."""
    email = parse_email(event)
    return f"Subject: {email.subject}\n\n{email.text}"


def grounded(request: CustomerRequest, source: str) -> list[str]:
    """The order number and the amount must appear in the email."""
    problems = values_in_source("order_id")(request, source)
    if request.amount is not None and not _amount_written(request.amount, source):
        problems.append(f"amount: {request.amount} does not appear in the email")
    return problems


def known_order(request: CustomerRequest, services: Mapping[str, Any]) -> list[str]:
    """A named order must exist (a misread number sends the email to the larger model)."""
    if request.order_id is None or shop_services(services).orders.get(request.order_id) is not None:
        return []
    return [f"order {request.order_id} is not one of the shop's orders"]


def _amount_written(amount: Decimal, source: str) -> bool:
    forms = {f"{amount:.2f}", f"{amount:f}".rstrip("0").rstrip(".")}
    if amount == amount.to_integral_value():
        forms.add(str(int(amount)))
    return any(form in source for form in forms)


CUSTOMER_REQUEST = Intake(
    schema=CustomerRequest,
    instructions=INSTRUCTIONS,
    source=email_text,
    models=(CHEAP_MODEL, ESCALATION_MODEL),
    grounding=grounded,
    check=known_order,
    max_attempts=2,
    max_tokens=256,
)
