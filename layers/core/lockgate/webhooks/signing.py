"""Sign deliveries the way each provider does: for tests, the demo and load scripts.

Never used on the receiving path; it exists so every test and demo request is
signed by one correct implementation instead of ad-hoc copies.
"""

from __future__ import annotations

import base64
import hashlib
import uuid
from datetime import UTC, datetime

from lockgate.config import SourceConfig
from lockgate.webhooks.codec import digest, standard_key, text_key
from lockgate.webhooks.decode import FORM, looks_like_json
from lockgate.webhooks.schemes import check_secrets, scheme_for


def sign(  # noqa: PLR0917 - positional optionals are the published contract
    source: SourceConfig,
    secret: str,
    body: bytes,
    now: int,
    delivery_id: str | None = None,
    event_type: str | None = None,
) -> dict[str, str]:
    """The headers (lower-case names) ``source``'s provider would send with ``body`` at ``now``.

    ``delivery_id`` and ``event_type`` go where the provider puts them in headers
    (GitHub, Standard Webhooks, Shopify, hmac's configured headers). Stripe and
    Slack carry them in the body, so there they are ignored. A missing
    ``delivery_id`` is derived from the body and time, so re-signing is stable.
    """
    scheme_for(source)  # refuses unusable hmac options
    check_secrets(source, [secret])
    timestamp = str(int(now))
    seed = hashlib.sha256(timestamp.encode() + b"." + body).digest()
    key = text_key(secret) or b""  # check_secrets refused empty secrets
    headers = {"content-type": _content_type(body)}
    if source.scheme == "github":
        headers |= {
            "x-hub-signature-256": "sha256=" + digest(key, body).hex(),
            "x-hub-signature": "sha1=" + digest(key, body, "sha1").hex(),
            "x-github-delivery": delivery_id or str(uuid.UUID(bytes=seed[:16], version=4)),
            "x-github-event": event_type or "ping",
            "user-agent": "GitHub-Hookshot/lockgate-test",
        }
    elif source.scheme == "stripe":
        signature = digest(key, timestamp.encode() + b"." + body).hex()
        headers["stripe-signature"] = f"t={timestamp},v1={signature}"
    elif source.scheme == "standard":
        ident = delivery_id or "msg_" + seed.hex()[:27]
        signed = f"{ident}.{timestamp}.".encode() + body
        signature = base64.b64encode(digest(standard_key(secret) or b"", signed)).decode()
        headers |= {
            "webhook-id": ident,
            "webhook-timestamp": timestamp,
            "webhook-signature": f"v1,{signature}",
        }
    elif source.scheme == "slack":
        signature = digest(key, f"v0:{timestamp}:".encode() + body).hex()
        headers |= {"x-slack-request-timestamp": timestamp, "x-slack-signature": f"v0={signature}"}
    elif source.scheme == "shopify":
        headers |= {
            "x-shopify-hmac-sha256": base64.b64encode(digest(key, body)).decode(),
            "x-shopify-webhook-id": delivery_id or str(uuid.UUID(bytes=seed[:16], version=4)),
            "x-shopify-triggered-at": _iso(int(now)),
        }
        if event_type:
            headers["x-shopify-topic"] = event_type
    else:  # hmac; scheme_for refused any other scheme
        headers |= _hmac_headers(source, key, body, delivery_id or seed.hex()[:32], event_type)
    return headers


def _hmac_headers(
    source: SourceConfig, key: bytes, body: bytes, delivery_id: str, event_type: str | None
) -> dict[str, str]:
    """A plain-HMAC source's signature header, and its id and event-type headers if it has them."""
    raw = digest(key, body, source.algorithm)
    encoded = raw.hex() if source.encoding == "hex" else base64.b64encode(raw).decode()
    headers = {(source.header or "").lower(): source.prefix + encoded}
    if source.id_header:
        headers[source.id_header.lower()] = delivery_id
    if source.event_type_header and event_type:
        headers[source.event_type_header.lower()] = event_type
    return headers


def _content_type(body: bytes) -> str:
    """The content type a provider sends such a body with: JSON, XML (Shopify's option), else a form
    (GitHub's option, Slack's slash commands and interactivity)."""
    if looks_like_json(body):
        return "application/json"
    return "application/xml" if body.lstrip()[:1] == b"<" else FORM


def _iso(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat().replace("+00:00", "Z")
