"""The helpdesk's delivery: its body validated into an Email, or BadDelivery when it never can be."""

from __future__ import annotations

from email.utils import parseaddr

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from lockgate import BadDelivery, InboxEvent, describe_validation_error
from shop.arguments import MESSAGE_ID, check_email_address
from shop.mailbox import Email


class HelpdeskEmail(BaseModel):
    """The helpdesk's delivery body."""

    model_config = ConfigDict(extra="ignore")

    message_id: str = Field(pattern=MESSAGE_ID.pattern)
    sender: str = Field(alias="from", min_length=3, max_length=320)
    subject: str = Field(default="", max_length=1000)
    text: str = Field(max_length=100_000)


def parse_email(event: InboxEvent) -> Email:
    """The helpdesk body as an Email; BadDelivery when it can never be processed."""
    data = event.json()
    try:
        body = HelpdeskEmail.model_validate(data)
    except ValidationError as exc:
        raise BadDelivery(f"helpdesk email: {describe_validation_error(exc)}") from exc
    _, address = parseaddr(body.sender)  # "Ada Lovelace <ada@example.com>" or a plain address
    try:
        sender = check_email_address(address).lower()
    except ValueError as exc:
        raise BadDelivery("helpdesk email: 'from' is not an email address") from exc
    return Email(
        body.message_id,
        sender,
        body.subject,
        body.text,
        event.delivery.received_at,
        event.delivery.delivery_id,
    )
