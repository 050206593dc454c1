"""A workflow: an agent answers each new Stripe dispute, and may refund the disputed charge.

Made with `lockgate new workflow disputes --source stripe --event charge.dispute.created`, then
given a refund tool (refunds.py, on the payments API in payments.py): see docs/tutorial.md.
"""

from __future__ import annotations

from lockgate import Resource, Setup

# What this workflow uses in AWS: `lockgate check` compares it with template.yaml.
RESOURCES = (
    Resource(
        "DisputesItemsTable",
        variable="DISPUTES_ITEMS_TABLE",
        worker=("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"),
    ),
)


def register(setup: Setup) -> None:
    """Add the disputes task, with refunds through the payments API, to the worker."""
    from disputes.items import Items
    from disputes.payments import PaymentsApi
    from disputes.refunds import with_refunds
    from disputes.task import disputes_task

    items = Items(setup.client("dynamodb"), setup.environ["DISPUTES_ITEMS_TABLE"], setup.clock)
    payments = PaymentsApi(setup.environ.get("PAYMENTS_API_URL", "https://api.payments.example"))
    setup.add_task(with_refunds(disputes_task(items), payments))
