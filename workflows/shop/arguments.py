"""The shop tools' argument models: what the model sees as JSON schema, and how its input is checked.

Error messages are written for the model: they say what a valid value looks like.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema

ORDER_ID = re.compile(r"^A-\d{4}$")
MESSAGE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@:+<>\-]{0,199}$")  # no '#', spaces or quotes
# An address as a mail server would take it, ASCII only (no look-alike Unicode addresses).
_LOCAL = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~\-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~\-]+)*"
_HOST = r"(?:[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63}"
EMAIL_ADDRESS = re.compile(rf"^{_LOCAL}@{_HOST}$")


def check_order_id(value: str) -> str:
    """An order number like A-1042."""
    if not ORDER_ID.fullmatch(value):
        raise ValueError("Order numbers look like A-1042")
    return value


def check_message_id(value: str) -> str:
    """A helpdesk message id: letters, digits and . _ @ : + < > -."""
    if not MESSAGE_ID.fullmatch(value):
        raise ValueError("message ids are up to 200 letters, digits and . _ @ : + < > -, e.g. msg-1001")
    return value


def check_email_address(value: str) -> str:
    """One plain address, e.g. ada@example.com (no display name, no list)."""
    if len(value) > 254 or not EMAIL_ADDRESS.fullmatch(value) or len(value.partition("@")[0]) > 64:
        raise ValueError("use one plain email address, e.g. ada@example.com")
    return value


def check_one_line(value: str) -> str:
    """No line breaks or control characters (a subject becomes a mail header)."""
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise ValueError("must be one line, without control characters")
    return value


def to_cents(value: Any) -> Decimal:
    """Dollars with at most two decimals, from a number or a numeric string."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str, Decimal)):
        raise ValueError("amount must be a number of dollars, e.g. 25.00")
    try:
        amount = Decimal(str(value).strip())
    except InvalidOperation as exc:
        raise ValueError("amount must be a number of dollars, e.g. 25.00") from exc
    if not amount.is_finite():
        raise ValueError("amount must be a number of dollars, e.g. 25.00")
    # The range first: quantizing a huge value raises instead of answering.
    if amount <= 0 or amount >= Decimal("1000000"):
        raise ValueError("amount must be more than 0 and less than 1000000")
    if amount != amount.quantize(Decimal("0.01")):
        raise ValueError("amount must be dollars with at most two decimals, e.g. 25.00")
    return amount.quantize(Decimal("0.01"))


OrderId = Annotated[
    str,
    BeforeValidator(lambda v: v.strip().upper() if isinstance(v, str) else v),
    AfterValidator(check_order_id),
    WithJsonSchema({"type": "string", "pattern": ORDER_ID.pattern, "description": "e.g. A-1042"}),
]
MessageId = Annotated[
    str,
    BeforeValidator(lambda v: v.strip() if isinstance(v, str) else v),
    AfterValidator(check_message_id),
    WithJsonSchema({"type": "string", "maxLength": 200, "description": "the helpdesk message id"}),
]
EmailAddress = Annotated[
    str,
    BeforeValidator(lambda v: v.strip() if isinstance(v, str) else v),
    AfterValidator(check_email_address),
    WithJsonSchema({"type": "string", "format": "email", "maxLength": 254}),
]
Money = Annotated[
    Decimal,
    BeforeValidator(to_cents),
    WithJsonSchema(
        {
            "type": "number",
            "exclusiveMinimum": 0,
            "maximum": 999999.99,  # what to_cents takes: an edit above it is refused when it is typed
            "multipleOf": 0.01,
            "description": "dollars, e.g. 25.00",
        }
    ),
]


class Args(BaseModel):
    """Base for tool arguments: unknown fields are an error the model can fix."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class ReadEmailArgs(Args):
    """read_email's arguments."""

    message_id: MessageId


class LookupOrderArgs(Args):
    """lookup_order's arguments."""

    order_id: OrderId


class FindOrdersArgs(Args):
    """find_orders' arguments."""

    customer_email: EmailAddress


class SearchHelpArgs(Args):
    """search_help's arguments."""

    query: str = Field(min_length=1, max_length=500, description="the customer's question in a few words")


class SendEmailArgs(Args):
    """send_email's arguments."""

    to: EmailAddress
    subject: Annotated[str, Field(min_length=1, max_length=200), AfterValidator(check_one_line)]
    body: str = Field(min_length=1, max_length=5000, description="plain text")


class RefundOrderArgs(Args):
    """refund_order's arguments."""

    order_id: OrderId
    amount: Money
    reason: str = Field(min_length=1, max_length=200, description="why, in a few words")
