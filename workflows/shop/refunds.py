"""refund_order: refund part or all of one of the customer's orders, once per idempotency key."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from lockgate import Fact, OutcomeUnknown, Risk, RunFacts, Tool, ToolContext, ToolError, fingerprint
from shop.arguments import RefundOrderArgs
from shop.data import Order, ShopUnavailable
from shop.facts import ShopFacts
from shop.payments import Refund, RefundRefused, RefundUncertain
from shop.policies import (
    customer_of,
    money,
    refund_identity,
    refund_needs_person,
    refund_order_is_customers,
    refund_within_refundable,
)
from shop.services import shop_services


def refund_order(args: RefundOrderArgs, context: ToolContext) -> dict[str, Any]:
    """Write the payment record (keyed by the idempotency key) and count it on the order, atomically."""
    shop = shop_services(context.services)
    customer = customer_of(context.facts)
    key = context.idempotency_key or (
        f"{context.run_id}#refund_order#{fingerprint(args.model_dump(mode='json'))}"
    )
    try:
        order = shop.orders.get(args.order_id)
        if order is None or customer is None or order.customer_email.lower() != customer:
            raise ToolError(
                f"Order {args.order_id} is not one of this customer's orders; nothing was refunded."
            )
        refund = Refund(
            key,
            order.order_id,
            order.customer_email,
            args.amount,
            order.currency,
            args.reason,
            context.run_id,
            int(shop.clock.now()),
        )
        stored, _new = shop.payments.refund(refund, order)
    except RefundRefused as exc:
        raise ToolError(f"{exc}. Nothing was refunded.") from exc
    except RefundUncertain as exc:
        raise OutcomeUnknown(f"refund {key} may or may not have been written: {exc}") from exc
    except ShopUnavailable as exc:
        raise ToolError("The refund could not be made right now; nothing was refunded.") from exc
    if (stored.order_id, stored.amount) != (args.order_id, args.amount):
        raise ToolError("This refund key was already used for a different refund; nothing was refunded.")
    return stored.result()


def reconcile(idempotency_key: str, services: Mapping[str, Any]) -> dict[str, Any] | None:
    """What a refund with this key did: its result if the payment was written, None if it wasn't.

    The payment and the order's ``refunded`` are written in one transaction, so the payment
    record alone tells the whole story.
    """
    stored = shop_services(services).payments.get(idempotency_key)
    return stored.result() if stored else None


def refund_facts(args: RefundOrderArgs, facts: RunFacts) -> list[Fact]:
    """What a reviewer needs: the customer's message as received (unverified) and the order now."""
    shown: list[Fact] = []
    email = _email(facts)
    if email is not None:
        shown.append(
            Fact(
                "The customer's message (their own words, unverified)",
                f"From: {email.sender}\nSubject: {email.subject}\n\n{email.text}",
                verified=False,
            )
        )
    order = _order(facts, args.order_id)
    if order is None:
        shown.append(Fact(f"Order {args.order_id}", "could not be read when this was proposed", False))
        return shown
    return [
        *shown,
        Fact("Order", f"{order.order_id}, placed by {order.customer_email}"),
        Fact("Order status", order.status),
        Fact("Order total", in_currency(order.total, order.currency)),
        Fact("Already refunded", in_currency(order.refunded, order.currency)),
        Fact("Left to refund after this", in_currency(order.refundable - args.amount, order.currency)),
    ]


def refund_summary(args: RefundOrderArgs, facts: RunFacts) -> str:
    """The summary with the order's currency, e.g. "refund $62.00 USD on order A-1002"."""
    order = _order(facts, args.order_id)
    if order is None:
        return f"refund {money(args.amount)} on order {args.order_id}"
    return f"refund {in_currency(args.amount, order.currency)} on order {args.order_id}"


def in_currency(amount: Decimal, currency: str) -> str:
    """An amount with its currency: "$62.00 USD", "62.00 EUR"."""
    return f"{money(amount)} USD" if currency == "USD" else f"{amount:,.2f} {currency}"


def _order(facts: RunFacts, order_id: str) -> Order | None:
    """The order as the checks just read it, or None if it cannot be read (the page then says so)."""
    if facts.lookup is None:
        return None
    try:
        lookup = facts.lookup
        order: Order | None = (
            lookup.as_checked(order_id) if isinstance(lookup, ShopFacts) else lookup.order(order_id)
        )
    except ShopUnavailable:
        return None
    return order


def _email(facts: RunFacts) -> Any:
    """The email that started the run, or None."""
    message_id = facts.get("message_id")
    if facts.lookup is None or not isinstance(message_id, str):
        return None
    try:
        return facts.lookup.email(message_id)
    except ShopUnavailable:
        return None


REFUND_ORDER: Tool[RefundOrderArgs] = Tool(
    name="refund_order",
    description=(
        "Refund an amount in dollars on one of the customer's orders (like A-1042), at most what is "
        "left to refund. Refunds over $50.00 go to the team for approval: tell the customer the team "
        "will review it, never that it is done, unless this tool says it was refunded."
    ),
    args=RefundOrderArgs,
    run=refund_order,
    summary=lambda a: f"refund {money(a.amount)} on order {a.order_id}",
    risk=Risk.ACT,
    policies=(refund_order_is_customers, refund_within_refundable),
    needs_person_when_tainted=True,  # a refund after reading an email waits for a person
    approval_threshold=refund_needs_person,
    identity=refund_identity,
    target=lambda a: a.order_id,  # one refund per order may wait for a person
    reconcile=reconcile,
    facts=refund_facts,
    summary_with_facts=refund_summary,
    after_approve="the customer is emailed that it was done (or that it could not be)",
    after_reject="the customer is emailed the team's decision, with your reason, by the assistant",
    editable=("amount",),  # a reviewer may approve a smaller (or larger, within policy) refund
    # Who must approve depends on the amount: lockgate.toml's [[approvals.tools.refund_order.rules]]
    # (over $100: two reviewers with the refunds role; over $1,000: refused), on the version that runs.
)
