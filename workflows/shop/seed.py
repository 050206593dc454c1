"""Example data for the local stack and the tests: two customers and their orders. Idempotent."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from shop.data import LineItem, Order, Orders
from shop.services import DEFAULT_FROM_ADDRESS

ADA = "ada@example.com"
GRACE = "grace@example.com"
DAY = 86_400
PLACED = 1_766_620_800  # 2025-12-25T00:00:00Z: fixed, so every seed is the same


def _line(sku: str, name: str, qty: int, price: str) -> LineItem:
    return LineItem(sku, name, qty, Decimal(price))


ORDERS: tuple[Order, ...] = (
    Order(
        "A-1042",
        ADA,
        "shipped",
        (
            _line("MUG-BLU", "Blue enamel mug", 2, "14.50"),
            _line("TEA-EG", "Earl Grey loose tea, 250 g", 1, "20.00"),
        ),
        Decimal("49.00"),
        Decimal("0.00"),
        "USD",
        PLACED + 3 * DAY,
        carrier="UPS",
        tracking_url="https://shop.example.com/track/A-1042",
    ),
    Order(
        "A-1043",
        ADA,
        "delivered",
        (_line("APR-LIN", "Linen apron", 1, "45.00"), _line("POT-CI", "Cast-iron teapot", 1, "75.00")),
        Decimal("120.00"),
        Decimal("0.00"),
        "USD",
        PLACED - 10 * DAY,
        carrier="UPS",
        tracking_url="https://shop.example.com/track/A-1043",
    ),
    Order(
        "A-2001",
        GRACE,
        "delivered",
        (_line("THR-WOOL", "Wool throw blanket", 1, "80.00"),),
        Decimal("80.00"),
        Decimal("0.00"),
        "USD",
        PLACED - 5 * DAY,
        carrier="USPS",
        tracking_url="https://shop.example.com/track/A-2001",
    ),
    Order(
        "A-2002",
        GRACE,
        "processing",
        (_line("PLT-CER", "Ceramic planter", 2, "17.50"),),
        Decimal("35.00"),
        Decimal("0.00"),
        "USD",
        PLACED + 4 * DAY,
    ),
)


def seed(
    dynamodb: Any, orders_table: str, *, ses: Any = None, from_address: str = DEFAULT_FROM_ADDRESS
) -> list[str]:
    """Create the example orders that don't exist yet (ids returned); verify the sender in (moto's) SES."""
    orders = Orders(dynamodb, orders_table)
    created = [order.order_id for order in ORDERS if orders.put(order)]
    if ses is not None:
        ses.verify_email_identity(EmailAddress=from_address)
    return created
