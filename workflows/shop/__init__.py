"""The example workflow: a small shop's support inbox. Fork this package, not the library."""

from __future__ import annotations

from lockgate.workflows import Setup
from shop.handlers import order_updated


def register(setup: Setup) -> None:
    """Tell the worker which handler takes which event."""
    setup.router.add("partner", "order.updated", order_updated)
