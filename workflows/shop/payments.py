"""Refunds: one payment record per idempotency key, and the order's ``refunded`` bumped with it, atomically.

Both writes are one DynamoDB transaction, so a refund is never recorded without the order
counting it (or the other way round):

- Put the payment, keyed by the ledger's idempotency key, if no payment has that key. A repeat
  with the same key cancels the transaction and returns the stored refund: never a second one.
- Update the order: ``refunded = refunded + amount`` only if the order is the customer's and
  ``refunded <= total - amount`` (DynamoDB conditions cannot add, so the ceiling is computed
  from the order's total, which the condition also pins).

The key is also the transaction's ClientRequestToken: DynamoDB's own idempotency for a retry
of the same call within ten minutes.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from lockgate.dynamo import error_code
from shop.data import Order, ShopUnavailable, cents, from_item, iso, to_item


class RefundRefused(Exception):
    """The order cannot take this refund: not the customer's, or more than is left to refund."""


class RefundUncertain(Exception):
    """The refund may or may not have been written (a timeout or a server error); reconcile by key."""


@dataclass(frozen=True)
class Refund:
    """A stored refund."""

    idempotency_key: str
    order_id: str
    customer_email: str
    amount: Decimal
    currency: str
    reason: str
    run_id: str
    created_at: int

    @classmethod
    def from_item(cls, item: dict[str, Any]) -> Refund:
        """From a low-level DynamoDB item."""
        v = from_item(item)
        return cls(
            idempotency_key=v["idempotency_key"],
            order_id=v["order_id"],
            customer_email=v["customer_email"],
            amount=cents(v["amount"]),
            currency=v.get("currency", "USD"),
            reason=v.get("reason", ""),
            run_id=v.get("run_id", ""),
            created_at=int(v.get("created_at", 0)),
        )

    def result(self) -> dict[str, Any]:
        """What refund_order returns: ``refunded`` is this refund's amount, like lookup_order's field."""
        return {
            "status": "refunded",
            "refund_id": self.idempotency_key,
            "order_id": self.order_id,
            "refunded": f"{self.amount:.2f}",
            "currency": self.currency,
            "created_at": iso(self.created_at),
        }


class Payments:
    """The Payments table (key ``idempotency_key``) and the refund transaction."""

    def __init__(self, dynamodb: Any, table: str, orders_table: str) -> None:
        self._db = dynamodb
        self.table = table
        self._orders_table = orders_table

    def get(self, idempotency_key: str) -> Refund | None:
        """The refund written with this key, if any (for repeats and reconciliation)."""
        try:
            response = self._db.get_item(
                TableName=self.table, Key={"idempotency_key": {"S": idempotency_key}}, ConsistentRead=True
            )
        except (ClientError, BotoCoreError) as exc:
            raise ShopUnavailable(f"payments: {type(exc).__name__}") from exc
        item = response.get("Item")
        return Refund.from_item(item) if item else None

    def refunds_between(self, start: int, end: int) -> list[Refund]:
        """Refunds created in ``[start, end)`` (epoch seconds), oldest first: a paged, filtered scan.

        A scan suits the example shop's table (refunds for weeks, not years); a busy shop would
        add an index on the day instead.
        """
        found: list[Refund] = []
        kwargs: dict[str, Any] = {
            "TableName": self.table,
            "FilterExpression": "created_at >= :start AND created_at < :end",
            "ExpressionAttributeValues": to_item({":start": start, ":end": end}),
        }
        try:
            while True:
                response = self._db.scan(**kwargs)
                found += [Refund.from_item(item) for item in response.get("Items", [])]
                if "LastEvaluatedKey" not in response:
                    return sorted(found, key=lambda r: (r.created_at, r.idempotency_key))
                kwargs["ExclusiveStartKey"] = response["LastEvaluatedKey"]
        except (ClientError, BotoCoreError) as exc:
            raise ShopUnavailable(f"payments: {type(exc).__name__}") from exc

    def refund(self, refund: Refund, order: Order) -> tuple[Refund, bool]:
        """Write the refund and count it on the order; (the stored refund, whether it is new)."""
        ceiling = order.total - refund.amount
        payment = to_item(
            {
                "idempotency_key": refund.idempotency_key,
                "kind": "refund",
                "order_id": refund.order_id,
                "customer_email": refund.customer_email,
                "amount": refund.amount,
                "currency": refund.currency,
                "reason": refund.reason,
                "run_id": refund.run_id,
                "created_at": refund.created_at,
            }
        )
        try:
            self._db.transact_write_items(
                TransactItems=[
                    {
                        "Put": {
                            "TableName": self.table,
                            "Item": payment,
                            "ConditionExpression": "attribute_not_exists(idempotency_key)",
                            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                        }
                    },
                    {
                        "Update": {
                            "TableName": self._orders_table,
                            "Key": {"order_id": {"S": refund.order_id}},
                            "UpdateExpression": "SET refunded = if_not_exists(refunded, :zero) + :amount, "
                            "updated_at = :now",
                            "ConditionExpression": "customer_email = :customer AND #total = :total AND "
                            "(attribute_not_exists(refunded) OR refunded <= :ceiling)",
                            "ExpressionAttributeNames": {"#total": "total"},
                            "ExpressionAttributeValues": to_item(
                                {
                                    ":zero": Decimal(0),
                                    ":amount": refund.amount,
                                    ":now": refund.created_at,
                                    ":customer": refund.customer_email,
                                    ":total": order.total,
                                    ":ceiling": ceiling,
                                }
                            ),
                        }
                    },
                ],
                ClientRequestToken=hashlib.sha256(refund.idempotency_key.encode()).hexdigest()[:36],
            )
        except ClientError as exc:
            return self._cancelled(exc, refund)
        except BotoCoreError as exc:  # a timeout or a dropped connection: it may have been written
            raise RefundUncertain(type(exc).__name__) from exc
        return refund, True

    def _cancelled(self, exc: ClientError, refund: Refund) -> tuple[Refund, bool]:
        code = error_code(exc)
        if code == "IdempotentParameterMismatchException":
            # The same key was used within DynamoDB's ten-minute window: that call wrote it.
            stored = self.get(refund.idempotency_key)
            if stored is None:
                raise RefundUncertain(code) from exc
            return stored, False
        if code != "TransactionCanceledException":
            if code in ("ValidationException", "ResourceNotFoundException", "AccessDeniedException"):
                raise ShopUnavailable(f"payments: {code}") from exc  # never written
            raise RefundUncertain(code) from exc
        reasons: list[dict[str, Any]] = [dict(r) for r in exc.response.get("CancellationReasons") or []]
        payment_reason, order_reason = (reasons + [{}, {}])[:2]
        if payment_reason.get("Code") == "ConditionalCheckFailed":
            old = payment_reason.get("Item")
            stored = Refund.from_item(old) if old else self.get(refund.idempotency_key)
            if stored is None:
                raise RefundUncertain("payment condition failed without a stored payment") from exc
            return stored, False  # a repeat: the refund this key already made
        if order_reason.get("Code") == "ConditionalCheckFailed":
            raise RefundRefused(
                f"order {refund.order_id} cannot take a refund of ${refund.amount:.2f}: it is more than "
                "is left to refund"
            ) from exc
        # Conflicts with another transaction and throttling cancel the whole transaction.
        raise ShopUnavailable(f"payments: {[r.get('Code') for r in reasons]}") from exc
