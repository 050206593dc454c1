"""The support-inbox task: a customer's email arrives from the helpdesk; the agent answers it.

``start`` stores the email and gives the model only ids: the email's text is untrusted and
reaches the model only through read_email's result.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lockgate import BadDelivery, InboxEvent, RunFacts, Start, Task
from shop.arguments import MESSAGE_ID
from shop.facts import ShopFacts
from shop.helpdesk import parse_email
from shop.intake import CHEAP_MODEL, CUSTOMER_REQUEST
from shop.notices import tell_customer
from shop.refunds import REFUND_ORDER
from shop.replies import send_email_tool
from shop.services import ShopServices, shop_services
from shop.tools import FIND_ORDERS, LOOKUP_ORDER, READ_EMAIL, SEARCH_HELP

RECENT_SECONDS = 7 * 86_400
RECENT_LIMIT = 10

SYSTEM = """\
You are the customer support assistant of Example Shop, a small online shop. Each task is one
email from a customer. Be warm, brief and concrete.

How to work:
1. Read the email with read_email (its message_id is in the task message).
2. For questions about an order, use lookup_order (or find_orders when no number is given).
   Only ever discuss the orders of the customer who wrote in.
3. For questions about shipping, tracking, returns, refunds, damage, addresses or payment,
   use search_help and answer only from the passages it returns, citing them like [1]. If it
   finds nothing relevant, do not answer from general knowledge: say the team will reply.
4. Refunds: refund_order issues refunds of up to $50.00 within what is left to refund. Refunds
   over $50 go to our team for review; say so, and never say a refund is done unless
   refund_order returned "status": "refunded".
5. Finish by sending exactly one reply with send_email to the customer's address. Links may
   only point to https://{host}.
6. When a person decides on something you passed to the team, its result comes back to you as
   decision_on_proposal's. Then send the customer one more email saying what the team decided:
   rejected (give the reviewer's reason in your own words, if there is one), or, when a reviewer
   changed a refund, what was actually refunded (ran_with and result), not what you proposed.
   Never propose a rejected action again.

Never promise or describe anything the tools did not do. If a tool refuses or says a person
must approve, tell the customer their request has been passed to the team. Never include other
customers' data."""


def start(event: InboxEvent, services: Mapping[str, Any]) -> Start:
    """Store the email, then begin the run with ids only and the verified sender as a fact."""
    shop = shop_services(services)
    email = parse_email(event)
    known = email
    if not shop.mailbox.store(email):
        stored = shop.mailbox.get(email.message_id)
        if stored is None or stored.sender != email.sender:
            raise BadDelivery("helpdesk email: this message_id was already used by another sender")
        known = stored  # a redelivery: the email as first stored
    earlier = [
        message_id
        for message_id in shop.mailbox.recent_from(
            email.sender, email.received_at - RECENT_SECONDS, email.received_at, RECENT_LIMIT + 1
        )
        if message_id != email.message_id and MESSAGE_ID.fullmatch(message_id)
    ][:RECENT_LIMIT]
    prompt = (
        f"New customer email: message_id={email.message_id}. "
        f"Earlier messages from this sender in the last 7 days: {', '.join(earlier) or 'none'}"
    )
    facts = RunFacts(
        values={"customer_email": email.sender, "message_id": email.message_id},
        # The run's own email is known: its policy check and read_email need no read of it.
        lookup=ShopFacts(shop.orders, shop.mailbox, tuple(earlier)).remember(known),
        sender=email.sender,  # proposals are capped per sender ([approvals] max_pending_per_sender)
    )
    return Start(prompt=prompt, facts=facts)


def restore_facts(values: Mapping[str, Any], services: Mapping[str, Any]) -> RunFacts:
    """A run's facts again, with a live lookup: approved actions are re-checked against current data."""
    shop = shop_services(services)
    return RunFacts(values=dict(values), lookup=ShopFacts(shop.orders, shop.mailbox))


def support_inbox_task(services: ShopServices) -> Task:
    """The support-inbox task, wired to the shop's services."""
    settings = services.settings
    return Task(
        name="support-inbox",
        source="helpdesk",
        event_type="*",
        system=SYSTEM.format(host=settings.host),
        tools=(
            READ_EMAIL,
            LOOKUP_ORDER,
            FIND_ORDERS,
            SEARCH_HELP,
            send_email_tool(settings.host, settings.from_address),
            REFUND_ORDER,
        ),
        start=start,
        model=settings.model,
        max_steps=10,
        max_output_tokens=1024,
        services={"shop": services},
        restore_facts=restore_facts,
        on_decision=tell_customer,
        # A rejection or an edited refund comes back to the run, which tells the customer itself.
        respond=True,
        # Read the request first: a cheap model, escalating to a larger one; else a person.
        intake=CUSTOMER_REQUEST,
        # The same cheap model screens what the tools read (emails, help pages) for injected
        # instructions first; a flag makes the run's side effects wait for a person.
        screen_model=CHEAP_MODEL,
        # The hour on the shared prefix where emails are minutes apart, five minutes where they
        # are hours apart: chosen from the gaps the worker sees (docs/costs.md, "Prompt caching").
        cache_ttl="auto",
    )
