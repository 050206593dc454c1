"""The example workflow: a small shop's support inbox. Fork this package, not the library."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from lockgate import Part, Resource, Setup
from shop.handlers import order_updated

# What the shop uses on AWS and what each function's role may do there: every function that loads
# workflows refuses to start without these variables, and `lockgate check` compares this with
# template.yaml (the resources, the variables, the roles' actions: nothing missing, nothing more).
RESOURCES = (
    Resource(
        "ShopOrdersTable",
        variable="SHOP_ORDERS_TABLE",
        worker=("dynamodb:GetItem", "dynamodb:UpdateItem"),  # lookup_order; refund_order adds to `refunded`
        parts=(Part("index/by-customer", worker=("dynamodb:Query",)),),  # find_orders
    ),
    Resource(
        "ShopPaymentsTable",
        variable="SHOP_PAYMENTS_TABLE",
        # refund_order writes once per key and reads it back; list_refunds scans a day (the summary)
        worker=("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Scan"),
        jobs=("dynamodb:GetItem",),  # refund_order's reconcile hook looks its key up
    ),
    Resource(
        "ShopMailTable",
        variable="SHOP_MAIL_TABLE",
        # the intake stores emails; read_email reads a thread in one read; send_email records replies
        worker=("dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:PutItem"),
        jobs=("dynamodb:GetItem",),  # send_email's reconcile hook looks its key up
        parts=(Part("index/by-sender", worker=("dynamodb:Query",)),),  # a sender's recent message ids
    ),
    # The address replies come from: SES lets the worker send only as it (ses:FromAddress).
    Resource("ShopFromAddress", variable="SHOP_FROM_ADDRESS", worker=("ses:SendEmail",)),
)


def register(setup: Setup) -> None:
    """Tell the worker which handler takes which event, and add the agent tasks (inbox, refund summary).

    The tables and the address it needs are ``RESOURCES``: the worker has checked their variables.
    """
    setup.router.add("partner", "order.updated", order_updated)
    # Imported here so that loading the package for its handlers stays cheap.
    from shop.services import ShopServices, ShopSettings
    from shop.summary import refund_summary_task
    from shop.task import support_inbox_task

    services = ShopServices.build(ShopSettings.from_env(setup.environ), setup.client, setup.clock)
    setup.add_task(support_inbox_task(services))
    setup.add_task(refund_summary_task(services))  # on a schedule: [schedules.refund-summary]


def seed_local(client: Callable[[str], Any], resources: Mapping[str, str]) -> None:
    """Seed the embedded stack (`lockgate local`, the demo): two customers' orders, a verified sender."""
    from shop.seed import seed

    seed(client("dynamodb"), resources["ShopOrdersTable"], ses=client("ses"))
