"""The example workflow: a small shop's support inbox. Fork this package, not the library."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from lockgate import Setup
from shop.handlers import order_updated


def register(setup: Setup) -> None:
    """Tell the worker which handler takes which event, and add the agent tasks (inbox, refund summary).

    The task needs the shop's tables (SHOP_ORDERS_TABLE, SHOP_PAYMENTS_TABLE, SHOP_MAIL_TABLE);
    without any of them only the plain handler is registered.
    """
    setup.router.add("partner", "order.updated", order_updated)
    # Imported here so that loading the package for its handlers stays cheap.
    from shop.services import ShopServices, ShopSettings

    settings = ShopSettings.from_env(setup.environ)
    if settings is None:
        return
    from shop.summary import refund_summary_task
    from shop.task import support_inbox_task

    services = ShopServices.build(settings, setup.client, setup.clock)
    setup.add_task(support_inbox_task(services))
    setup.add_task(refund_summary_task(services))  # on a schedule: [schedules.refund-summary]


def seed_local(client: Callable[[str], Any], resources: Mapping[str, str]) -> None:
    """Seed the embedded stack (`lockgate local`, the demo): two customers' orders, a verified sender."""
    from shop.seed import seed

    seed(client("dynamodb"), resources["ShopOrdersTable"], ses=client("ses"))
