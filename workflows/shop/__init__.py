"""The example workflow: a small shop's support inbox. Fork this package, not the library."""

from __future__ import annotations

from lockgate.routing import Router
from shop.handlers import order_updated


def register(router: Router) -> None:
    """Tell the worker which handler takes which event."""
    router.add("partner", "order.updated", order_updated)
