"""What a verified delivery is: its provider id, event type and event time.

Only called after the signature verified, so the body is the provider's, but it
is still parsed defensively: any failure is a BadDelivery, never another error.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from lockgate.config import SourceConfig
from lockgate.errors import BadDelivery
from lockgate.webhooks.codec import epoch_seconds, first_header, header, standard_headers
from lockgate.webhooks.decode import body_kind, event_document, form_fields, json_object, looks_like_json

MAX_ID_CHARS = 256
MAX_TYPE_CHARS = 128
MAX_CHALLENGE_CHARS = 256
UNKNOWN = "unknown"
_MAX_EPOCH = 253_402_300_799  # 9999-12-31T23:59:59Z


@dataclass(frozen=True)
class DeliveryIdentity:
    """Who sent what: the provider's delivery id, event type and event time."""

    delivery_id: str  # provider's id; "sha256:<hex of body>" only as the last resort
    event_type: str  # provider's event type, "unknown" if the provider has none
    event_time: int | None  # provider's event timestamp in epoch seconds, if it gives one
    challenge: str | None = None  # Slack url_verification: the challenge to echo back (don't store)


def body_hash(body: bytes) -> str:
    """The last-resort delivery id: a digest of the exact bytes received."""
    return "sha256:" + hashlib.sha256(body).hexdigest()


def delivery_id(value: object, what: str) -> str:
    """A provider id as a short printable ASCII string; BadDelivery when absent or unusable."""
    if isinstance(value, bool) or not isinstance(value, str | int) or value == "":
        raise BadDelivery(f"no {what}")
    text = str(value)
    if len(text) > MAX_ID_CHARS or not (text.isascii() and text.isprintable()):
        raise BadDelivery(f"{what} is not a short printable ASCII string")
    return text


def event_type(value: object) -> str:
    """A provider event type, or "unknown" when absent or not a short printable string."""
    if isinstance(value, str) and 0 < len(value) <= MAX_TYPE_CHARS and value.isprintable():
        return value
    return UNKNOWN


def event_time(value: object) -> int | None:
    """Epoch seconds from a number or an ISO-8601 string (naive means UTC), else None."""
    if isinstance(value, bool):
        return None
    seconds: float
    if isinstance(value, int | float):
        seconds = value
    elif isinstance(value, str) and len(value) <= 64:
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            return None
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=UTC)
        seconds = parsed.timestamp()
    else:
        return None
    if not math.isfinite(seconds) or not 0 <= seconds <= _MAX_EPOCH:
        return None
    return int(seconds)


def dotted(document: Mapping[str, Any], path: str) -> object:
    """The value at ``a.b.c`` in a JSON object, or None."""
    value: object = document
    for part in path.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


def _object(document: object) -> dict[str, Any]:
    if not isinstance(document, dict):
        raise BadDelivery("body is not a JSON object")
    return document


def github(body: bytes, headers: Mapping[str, str]) -> DeliveryIdentity:
    """GitHub: ``x-github-delivery``; ``x-github-event`` plus the body's ``action``."""
    ident = delivery_id(header(headers, "x-github-delivery"), "x-github-delivery header")
    # A hook can be configured to send form bodies: payload=<the same JSON>, the same event.
    content_type = header(headers, "content-type") or ""
    if body_kind(body, content_type) == "form" and "payload" not in form_fields(body):
        raise BadDelivery("form body has no payload field")
    document = _object(event_document(body, content_type))
    kind = event_type(header(headers, "x-github-event"))
    action = document.get("action")
    if kind != UNKNOWN and isinstance(action, str) and action:
        kind = event_type(f"{kind}.{action}")
    return DeliveryIdentity(ident, kind, None)


def stripe(body: bytes, headers: Mapping[str, str]) -> DeliveryIdentity:
    """Stripe: the event object's ``id``, ``type`` and ``created``."""
    document = json_object(body)
    ident = delivery_id(document.get("id"), "event id")
    return DeliveryIdentity(ident, event_type(document.get("type")), event_time(document.get("created")))


def standard(body: bytes, headers: Mapping[str, str]) -> DeliveryIdentity:
    """Standard Webhooks: ``webhook-id``; the body's ``type`` and event ``timestamp``."""
    raw_id, raw_timestamp, _ = standard_headers(headers)
    ident = delivery_id(raw_id, "webhook-id header")
    document = json_object(body)
    kind = event_type(document.get("type") or document.get("event_type"))
    # The header timestamp is the attempt's (retries are re-signed with a new one);
    # the payload's ISO "timestamp" is when the event happened, so it wins.
    when = event_time(document.get("timestamp"))
    return DeliveryIdentity(ident, kind, when if when is not None else epoch_seconds(raw_timestamp))


def slack(body: bytes, headers: Mapping[str, str]) -> DeliveryIdentity:
    """Slack: Events API JSON, or the form bodies of slash commands and interactivity."""
    if looks_like_json(body):
        return _slack_event(json_object(body), body)
    fields = form_fields(body)
    if "payload" in fields:  # interactivity: block_actions, view_submission, shortcut, ...
        payload = json_object(fields["payload"])
        kind, trigger = event_type(payload.get("type")), payload.get("trigger_id")
    elif "command" in fields:
        kind, trigger = event_type("command:" + fields["command"]), fields.get("trigger_id")
    else:
        raise BadDelivery("form body is neither a slash command nor an interactivity payload")
    # Slack never retries these (a user sees an error instead), so the body hash
    # is only a fallback for the rare payload without a trigger_id.
    ident = delivery_id(trigger, "trigger_id") if trigger else body_hash(body)
    return DeliveryIdentity(ident, kind, None)


def _slack_event(document: Mapping[str, Any], body: bytes) -> DeliveryIdentity:
    kind = document.get("type")
    if kind == "url_verification":
        challenge = document.get("challenge")
        if not (
            isinstance(challenge, str)
            and 0 < len(challenge) <= MAX_CHALLENGE_CHARS
            and challenge.isascii()
            and challenge.isprintable()
        ):
            raise BadDelivery("url_verification without a usable challenge")
        return DeliveryIdentity("url_verification", "url_verification", None, challenge)
    when = event_time(document.get("event_time"))
    if kind == "event_callback":
        inner = document.get("event")
        inner_type = inner.get("type") if isinstance(inner, dict) else None
        ident = delivery_id(document.get("event_id"), "event_id")
        return DeliveryIdentity(ident, event_type(inner_type), when)
    # Other envelopes (e.g. app_rate_limited) carry no event_id.
    raw_id = document.get("event_id")
    ident = delivery_id(raw_id, "event_id") if raw_id else body_hash(body)
    return DeliveryIdentity(ident, event_type(kind), when)


def shopify(body: bytes, headers: Mapping[str, str]) -> DeliveryIdentity:
    """Shopify: everything is in headers, so the body (JSON or XML) is not parsed."""
    ident = delivery_id(
        first_header(headers, "x-shopify-webhook-id", "x-shopify-event-id"), "x-shopify-webhook-id header"
    )
    kind = event_type(header(headers, "x-shopify-topic"))
    return DeliveryIdentity(ident, kind, event_time(header(headers, "x-shopify-triggered-at")))


def generic(source: SourceConfig, body: bytes, headers: Mapping[str, str]) -> DeliveryIdentity:
    """The ``hmac`` scheme: id and type from the configured header or JSON field."""
    parsed: list[dict[str, Any]] = []

    def document() -> dict[str, Any]:  # decoded at most once, and only when a field is configured
        if not parsed:
            parsed.append(_object(event_document(body, header(headers, "content-type") or "")))
        return parsed[0]

    if source.id_header or source.id_field:
        raw: object = header(headers, source.id_header.lower()) if source.id_header else None
        if raw is None and source.id_field:
            raw = dotted(document(), source.id_field)
        ident = delivery_id(raw, "delivery id")
    else:
        ident = body_hash(body)
    kind = UNKNOWN
    if source.event_type_header:
        kind = event_type(header(headers, source.event_type_header.lower()))
    if kind == UNKNOWN and source.event_type_field:
        kind = event_type(dotted(document(), source.event_type_field))
    return DeliveryIdentity(ident, kind, None)
