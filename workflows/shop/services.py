"""The shop's settings (from the worker's environment) and the services its tools use."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from lockgate.clock import Clock
from lockgate.errors import ConfigError
from shop.data import Orders
from shop.help import HelpIndex
from shop.mailbox import Mailbox
from shop.payments import Payments

DEFAULT_FROM_ADDRESS = "support@shop.example.com"
DEFAULT_HOST = "shop.example.com"
DEFAULT_MODEL = "claude-sonnet-5-5"
DEFAULT_OWNER_ADDRESS = "owner@shop.example.com"
TABLE_VARIABLES = ("SHOP_ORDERS_TABLE", "SHOP_PAYMENTS_TABLE", "SHOP_MAIL_TABLE")


@dataclass(frozen=True)
class ShopSettings:
    """Where the shop's data lives, and who it is."""

    orders_table: str
    payments_table: str
    mail_table: str
    from_address: str = DEFAULT_FROM_ADDRESS
    host: str = DEFAULT_HOST
    model: str = DEFAULT_MODEL  # the template's ShopModelId
    owner_address: str = DEFAULT_OWNER_ADDRESS  # who gets the daily refund summary

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> ShopSettings:
        """The settings; ConfigError names a table variable that is missing (the shop's RESOURCES)."""
        values = {name: environ.get(name, "").strip() for name in TABLE_VARIABLES}
        missing = [name for name, value in values.items() if not value]
        if missing:
            raise ConfigError(f"environment variable {missing[0]} is required by the shop workflow")
        from_address = _address(environ, "SHOP_FROM_ADDRESS", DEFAULT_FROM_ADDRESS)
        owner = _address(environ, "SHOP_OWNER_ADDRESS", DEFAULT_OWNER_ADDRESS).lower()
        host = environ.get("SHOP_HOST", "").strip().lower() or DEFAULT_HOST
        if "/" in host or ":" in host or "@" in host:
            raise ConfigError(f"SHOP_HOST must be a bare host name like shop.example.com, got {host!r}")
        return cls(
            values["SHOP_ORDERS_TABLE"],
            values["SHOP_PAYMENTS_TABLE"],
            values["SHOP_MAIL_TABLE"],
            from_address,
            host,
            environ.get("SHOP_MODEL", "").strip() or DEFAULT_MODEL,
            owner,
        )


def _address(environ: Mapping[str, str], name: str, default: str) -> str:
    value = environ.get(name, "").strip() or default
    if value.count("@") != 1 or any(c.isspace() for c in value):
        raise ConfigError(f"{name} is not an email address: {value!r}")
    return value


@dataclass(frozen=True)
class ShopServices:
    """Everything the shop's tools and task use, built once by the composition root."""

    settings: ShopSettings
    orders: Orders
    payments: Payments
    mailbox: Mailbox
    ses: Any
    help: HelpIndex
    clock: Clock

    @classmethod
    def build(
        cls,
        settings: ShopSettings,
        client: Callable[[str], Any],
        clock: Clock,
        help_index: HelpIndex | None = None,
    ) -> ShopServices:
        """Adapters over clients from ``client`` (e.g. ``setup.client``)."""
        dynamodb = client("dynamodb")
        return cls(
            settings=settings,
            orders=Orders(dynamodb, settings.orders_table),
            payments=Payments(dynamodb, settings.payments_table, settings.orders_table),
            mailbox=Mailbox(dynamodb, settings.mail_table),
            ses=client("ses"),
            help=help_index or HelpIndex(base_url=f"https://{settings.host}/help"),
            clock=clock,
        )


def shop_services(services: Mapping[str, Any]) -> ShopServices:
    """The shop's services from a task's (or tool context's) services mapping."""
    shop = services.get("shop")
    if not isinstance(shop, ShopServices):
        raise ConfigError("the shop's services are not configured for this task")
    return shop
