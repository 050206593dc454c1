"""What DynamoDB's errors mean for the adapters, by error code (never by message text)."""

from __future__ import annotations

from botocore.exceptions import ClientError


def error_code(exc: ClientError) -> str:
    """The service's error code, e.g. ConditionalCheckFailedException."""
    return str(exc.response.get("Error", {}).get("Code", "ClientError"))


def conditional_failed(exc: ClientError) -> bool:
    """Whether a conditional write was refused because the item was not as expected."""
    return error_code(exc) == "ConditionalCheckFailedException"
