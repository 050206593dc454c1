"""Two DynamoDB moves the stores repeat: read one page, and make one conditional write."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from lockgate.errors import StoreUnavailable

Page = tuple[list[dict[str, Any]], dict[str, Any] | None]


def read_page(call: Callable[..., Any], start: dict[str, Any] | None, **request: Any) -> Page:
    """One page of ``client.query`` or ``client.scan`` from ``start``, and where the next begins (or None)."""
    if start:
        request["ExclusiveStartKey"] = start
    try:
        response = call(**request)
    except (ClientError, BotoCoreError) as exc:
        raise StoreUnavailable(type(exc).__name__) from exc
    return response.get("Items", []), response.get("LastEvaluatedKey")


def write_if(call: Callable[..., Any], **request: Any) -> bool:
    """Make one conditional write; False when its condition failed, StoreUnavailable on other errors."""
    try:
        call(**request)
    except ClientError as exc:
        code = str(exc.response.get("Error", {}).get("Code", "ClientError"))
        if code == "ConditionalCheckFailedException":
            return False
        raise StoreUnavailable(code) from exc
    except BotoCoreError as exc:
        raise StoreUnavailable(type(exc).__name__) from exc
    return True
