"""The one DynamoDB helper: read a page or a batch of keys, make a conditional write, read error
codes and numbers."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from lockgate.errors import StoreUnavailable

Page = tuple[list[dict[str, Any]], dict[str, Any] | None]
BATCH_GET_KEYS = 100  # BatchGetItem's limit per request


def read_page(call: Callable[..., Any], start: dict[str, Any] | None, **request: Any) -> Page:
    """One page of ``client.query`` or ``client.scan`` from ``start``, and where the next begins (or None)."""
    response = _page(call, start, request)
    return response.get("Items", []), response.get("LastEvaluatedKey")


def _page(call: Callable[..., Any], start: dict[str, Any] | None, request: dict[str, Any]) -> Any:
    """One paged read from ``start``; StoreUnavailable when the table cannot be read."""
    try:
        return call(**request, **({"ExclusiveStartKey": start} if start else {}))
    except (ClientError, BotoCoreError) as exc:
        raise StoreUnavailable(type(exc).__name__) from exc


def read_all(call: Callable[..., Any], **request: Any) -> list[dict[str, Any]]:
    """Every item of a ``client.query`` or ``client.scan``, page after page."""
    items, start = read_page(call, None, **request)
    while start:
        page, start = read_page(call, start, **request)
        items.extend(page)
    return items


def read_keys(
    db: Any, table: str, keys: Sequence[Mapping[str, Any]], *, consistent: bool = False
) -> list[dict[str, Any]]:
    """The items stored under ``keys`` (distinct), 100 keys a ``BatchGetItem``. A key DynamoDB left
    unprocessed is absent, as one with no item is: the caller reads it alone if it must.
    StoreUnavailable when the table cannot be read."""
    found: list[dict[str, Any]] = []
    for start in range(0, len(keys), BATCH_GET_KEYS):
        request: dict[str, Any] = {"Keys": list(keys[start : start + BATCH_GET_KEYS])}
        if consistent:
            request["ConsistentRead"] = True
        try:
            response = db.batch_get_item(RequestItems={table: request})
        except (ClientError, BotoCoreError) as exc:
            raise StoreUnavailable(type(exc).__name__) from exc
        found += response.get("Responses", {}).get(table, [])
    return found


def count_all(call: Callable[..., Any], **request: Any) -> int:
    """The total ``Count`` of a ``Select="COUNT"`` query or scan, page after page."""
    total, start = 0, None
    while True:
        response = _page(call, start, request)
        total += int(response.get("Count", 0))
        start = response.get("LastEvaluatedKey")
        if not start:
            return total


def write_if(call: Callable[..., Any], **request: Any) -> bool:
    """Make one conditional write; False when its condition failed, StoreUnavailable on other errors."""
    try:
        call(**request)
    except ClientError as exc:
        if conditional_failed(exc):
            return False
        raise StoreUnavailable(error_code(exc)) from exc
    except BotoCoreError as exc:
        raise StoreUnavailable(type(exc).__name__) from exc
    return True


def error_code(exc: ClientError) -> str:
    """The service's error code, e.g. ConditionalCheckFailedException (never the message text)."""
    return str(exc.response.get("Error", {}).get("Code", "ClientError"))


def conditional_failed(exc: ClientError) -> bool:
    """Whether a conditional write was refused because the item was not as expected."""
    return error_code(exc) == "ConditionalCheckFailedException"


def dec(value: float) -> Decimal:
    """Seconds (or a count) as an exact decimal to the millisecond, for a DynamoDB number."""
    return Decimal(f"{value:.3f}")


def num(item: Mapping[str, Any], name: str) -> Decimal | None:
    """A number attribute of a low-level item, or None when absent or not a number."""
    value = item.get(name)
    if not isinstance(value, dict) or "N" not in value:
        return None
    return Decimal(value["N"])
