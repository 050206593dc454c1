"""The shop's tables: orders, payments (refunds) and the mailbox. Adapters over injected clients.

Vendor errors are translated here: a failed condition becomes a domain answer, anything else
``ShopUnavailable``. Money is ``Decimal`` throughout (DynamoDB numbers), quantised to cents.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from botocore.exceptions import BotoCoreError, ClientError

from lockgate.dynamo import conditional_failed, error_code

CENT = Decimal("0.01")
_serializer = TypeSerializer()
_deserializer = TypeDeserializer()


class ShopUnavailable(Exception):
    """A shop table could not be read or written right now; retry later."""


def cents(value: Decimal | int | str) -> Decimal:
    """A money amount quantised to two decimals."""
    return Decimal(value).quantize(CENT)


def iso(epoch: int | Decimal) -> str:
    """Epoch seconds as an ISO 8601 UTC timestamp."""
    return datetime.fromtimestamp(int(epoch), UTC).isoformat().replace("+00:00", "Z")


def to_item(values: dict[str, Any]) -> dict[str, Any]:
    """Plain values (Decimal for numbers) as a low-level DynamoDB item, without None fields."""
    return {k: _serializer.serialize(v) for k, v in values.items() if v is not None}


def from_item(item: dict[str, Any]) -> dict[str, Any]:
    """A low-level DynamoDB item as plain values."""
    return {k: _deserializer.deserialize(v) for k, v in item.items()}


@dataclass(frozen=True)
class LineItem:
    """One line of an order."""

    sku: str
    name: str
    qty: int
    price: Decimal


@dataclass(frozen=True)
class Order:
    """An order as the shop's systems know it."""

    order_id: str
    customer_email: str
    status: str
    items: tuple[LineItem, ...]
    total: Decimal
    refunded: Decimal
    currency: str
    placed_at: int
    carrier: str | None = None
    tracking_url: str | None = None

    @property
    def refundable(self) -> Decimal:
        """What can still be refunded."""
        return self.total - self.refunded

    @classmethod
    def from_item(cls, item: dict[str, Any]) -> Order:
        """From a low-level DynamoDB item."""
        v = from_item(item)
        return cls(
            order_id=v["order_id"],
            customer_email=v["customer_email"],
            status=v["status"],
            items=tuple(
                LineItem(str(i["sku"]), str(i["name"]), int(i["qty"]), cents(i["price"]))
                for i in v.get("items", [])
            ),
            total=cents(v["total"]),
            refunded=cents(v.get("refunded", 0)),
            currency=v.get("currency", "USD"),
            placed_at=int(v.get("placed_at", 0)),
            carrier=v.get("carrier"),
            tracking_url=v.get("tracking_url"),
        )

    def to_item(self) -> dict[str, Any]:
        """As a low-level DynamoDB item."""
        return to_item(
            {
                "order_id": self.order_id,
                "customer_email": self.customer_email,
                "status": self.status,
                "items": [{"sku": i.sku, "name": i.name, "qty": i.qty, "price": i.price} for i in self.items],
                "total": self.total,
                "refunded": self.refunded,
                "currency": self.currency,
                "placed_at": self.placed_at,
                "carrier": self.carrier,
                "tracking_url": self.tracking_url,
            }
        )

    def details(self) -> dict[str, Any]:
        """What lookup_order shows the model (money as strings with two decimals)."""
        return {
            "order_id": self.order_id,
            "customer_email": self.customer_email,
            "status": self.status,
            "items": [
                {"sku": i.sku, "name": i.name, "qty": i.qty, "price": f"{i.price:.2f}"} for i in self.items
            ],
            "total": f"{self.total:.2f}",
            "refunded": f"{self.refunded:.2f}",
            "currency": self.currency,
            "placed_at": iso(self.placed_at),
            "carrier": self.carrier,
            "tracking_url": self.tracking_url,
        }

    def summary(self) -> dict[str, Any]:
        """What find_orders shows for each order."""
        return {
            "order_id": self.order_id,
            "status": self.status,
            "total": f"{self.total:.2f}",
            "refunded": f"{self.refunded:.2f}",
            "currency": self.currency,
            "placed_at": iso(self.placed_at),
            "items": len(self.items),
        }


class Orders:
    """The Orders table (key ``order_id``; index ``by-customer`` on ``customer_email``)."""

    INDEX = "by-customer"

    def __init__(self, dynamodb: Any, table: str) -> None:
        self._db = dynamodb
        self.table = table

    def get(self, order_id: str) -> Order | None:
        """One order, read consistently."""
        try:
            response = self._db.get_item(
                TableName=self.table, Key={"order_id": {"S": order_id}}, ConsistentRead=True
            )
        except (ClientError, BotoCoreError) as exc:
            raise ShopUnavailable(f"orders: {type(exc).__name__}") from exc
        item = response.get("Item")
        return Order.from_item(item) if item else None

    def of_customer(self, email: str) -> list[Order]:
        """A customer's orders, newest first (the index is eventually consistent)."""
        orders: list[Order] = []
        kwargs: dict[str, Any] = {
            "TableName": self.table,
            "IndexName": self.INDEX,
            "KeyConditionExpression": "customer_email = :email",
            "ExpressionAttributeValues": {":email": {"S": email.lower()}},
        }
        try:
            while True:
                page = self._db.query(**kwargs)
                orders += [Order.from_item(item) for item in page.get("Items", [])]
                if "LastEvaluatedKey" not in page or len(orders) >= 100:
                    break
                kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        except (ClientError, BotoCoreError) as exc:
            raise ShopUnavailable(f"orders: {type(exc).__name__}") from exc
        return sorted(orders, key=lambda o: (o.placed_at, o.order_id), reverse=True)

    def put(self, order: Order) -> bool:
        """Create an order unless it exists (seeding); True if created."""
        try:
            self._db.put_item(
                TableName=self.table,
                Item=order.to_item(),
                ConditionExpression="attribute_not_exists(order_id)",
            )
        except ClientError as exc:
            if conditional_failed(exc):
                return False
            raise ShopUnavailable(f"orders: {error_code(exc)}") from exc
        return True
