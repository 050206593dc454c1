"""HTTP at the edge: API Gateway v2 events in, responses out, domain errors mapped in one place."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lockgate.errors import (
    BadDelivery,
    InvalidSignature,
    LockgateError,
    PayloadTooLarge,
    SecretUnavailable,
    StoreUnavailable,
    UnknownSource,
)

SECURITY_HEADERS = {
    "content-type": "application/json",
    "cache-control": "no-store",
    "x-content-type-options": "nosniff",
}


@dataclass(frozen=True)
class HttpResponse:
    """A status, a body and headers."""

    status: int
    body: str
    headers: Mapping[str, str] = field(default_factory=lambda: dict(SECURITY_HEADERS))

    def to_apigw(self) -> dict[str, Any]:
        """The Lambda proxy response API Gateway expects."""
        return {"statusCode": self.status, "headers": dict(self.headers), "body": self.body}


def json_response(status: int, payload: Mapping[str, Any]) -> HttpResponse:
    """A JSON reply."""
    return HttpResponse(status, json.dumps(payload, separators=(",", ":")))


# Order matters only for subclasses; these are all leaves.
_ERROR_REPLIES: tuple[tuple[type[LockgateError], int, str | None], ...] = (
    (PayloadTooLarge, 413, "payload too large"),
    (UnknownSource, 404, "unknown source"),
    # The reason a signature failed goes to the log, never to the caller.
    (InvalidSignature, 401, "invalid signature"),
    (BadDelivery, 400, None),
    (StoreUnavailable, 503, "temporarily unavailable, retry later"),
    (SecretUnavailable, 503, "temporarily unavailable, retry later"),
)


def error_response(exc: LockgateError) -> HttpResponse:
    """The one place domain errors become HTTP replies."""
    for kind, status, message in _ERROR_REPLIES:
        if isinstance(exc, kind):
            return json_response(status, {"error": message or f"bad delivery: {exc}"})
    return json_response(500, {"error": "internal error"})


@dataclass(frozen=True)
class RawRequest:
    """The parts of an API Gateway v2 event the receiver needs, not yet decoded."""

    path_params: Mapping[str, str]
    headers: Mapping[str, str]
    body_text: str
    is_base64: bool

    @classmethod
    def from_apigw_v2(cls, event: Mapping[str, Any]) -> RawRequest:
        """Pick fields out of the event without trusting any of them."""
        headers = event.get("headers") or {}
        params = event.get("pathParameters") or {}
        body = event.get("body")
        return cls(
            path_params={str(k): str(v) for k, v in params.items()},
            headers={str(k).lower(): str(v) for k, v in headers.items()},
            body_text=body if isinstance(body, str) else "",
            is_base64=bool(event.get("isBase64Encoded")),
        )

    def check_size(self, limit: int) -> None:
        """Refuse an oversized body before decoding it (PayloadTooLarge)."""
        declared = self.headers.get("content-length", "")
        # isdigit() alone admits "²" and other Unicode digits that int() refuses.
        if declared.isascii() and declared.isdigit() and int(declared) > limit:
            raise PayloadTooLarge(f"declared {declared} bytes")
        # Upper bounds on the decoded size, cheap to compute.
        encoded = len(self.body_text)
        bound = (encoded * 3) // 4 if self.is_base64 else encoded * 4
        if bound > limit and self.decoded_size() > limit:
            raise PayloadTooLarge("body over the limit")

    def decoded_size(self) -> int:
        """The body's size in bytes."""
        if self.is_base64:
            return (len(self.body_text) * 3) // 4 - self.body_text[-2:].count("=")
        return len(self.body_text.encode("utf-8", "surrogatepass"))

    def body(self) -> bytes:
        """The raw body bytes, exactly as the provider sent them."""
        if not self.is_base64:
            return self.body_text.encode("utf-8", "surrogatepass")
        try:
            return base64.b64decode(self.body_text, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise BadDelivery("body is not valid base64") from exc
