"""refund_order: refund part or all of one of the customer's orders, once per idempotency key."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lockgate import OutcomeUnknown, Risk, Tool, ToolContext, ToolError, fingerprint
from shop.arguments import RefundOrderArgs
from shop.data import ShopUnavailable
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
    reconcile=reconcile,
    # Tool.high_stakes is one flag per tool; shop.policies.refund_is_high_stakes (> $200) is
    # the per-call rule, ready for when the approvals flow takes a predicate.
    high_stakes=False,
)
