"""Small helpers for State-table items written by the capacity controls (numbers, error codes)."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from botocore.exceptions import ClientError


def dec(value: float) -> Decimal:
    """Seconds (or a count) as an exact decimal to the millisecond, for a DynamoDB number."""
    return Decimal(f"{value:.3f}")


def num(item: Mapping[str, Any], name: str) -> Decimal | None:
    """A number attribute of a low-level item, or None when absent or not a number."""
    value = item.get(name)
    if not isinstance(value, dict) or "N" not in value:
        return None
    return Decimal(value["N"])


def error_code(exc: ClientError) -> str:
    """The AWS error code of a botocore ClientError."""
    return str(exc.response.get("Error", {}).get("Code", ""))
