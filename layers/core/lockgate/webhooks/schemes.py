"""Webhook signature verification for the six schemes Lockgate knows.

``verify`` works on the raw bytes before anything is parsed and raises only
InvalidSignature; ``identify`` (called after ``verify`` succeeded) raises only
BadDelivery. Reasons are for logs: they never contain a secret or the body.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from lockgate.config import SourceConfig
from lockgate.errors import ConfigError, InvalidSignature
from lockgate.webhooks import identity
from lockgate.webhooks.codec import (
    DIGEST_SIZES,
    MAX_HEADER_CHARS,
    any_match,
    epoch_seconds,
    header,
    standard_headers,
    standard_key,
    text_key,
    unbase64,
    unhex,
    utf8,
)
from lockgate.webhooks.identity import DeliveryIdentity

__all__ = ["DeliveryIdentity", "Scheme", "check_secrets", "scheme_for"]


class Scheme(Protocol):
    """How one provider signs and identifies its deliveries."""

    def verify(self, body: bytes, headers: Mapping[str, str], secrets: Sequence[str], now: float) -> None:
        """Raise lockgate.errors.InvalidSignature(reason) unless one of the secrets signed body."""

    def identify(self, body: bytes, headers: Mapping[str, str]) -> DeliveryIdentity:
        """Raise lockgate.errors.BadDelivery(reason) if there is no delivery id or the body is unparsable."""


class _SourceScheme:
    """A scheme bound to one source's config (the hmac scheme's options, every tolerance).

    A plain class, not six dataclasses: each dataclass costs the receiver's cold start about
    0.4 ms of generated code (benchmarks/cold_start.py), for a single field.
    """

    __slots__ = ("source",)

    def __init__(self, source: SourceConfig) -> None:
        self.source = source


def _required(headers: Mapping[str, str], name: str) -> str:
    value = header(headers, name)
    if value is None:
        raise InvalidSignature(f"missing {name} header")
    if len(value) > MAX_HEADER_CHARS or not value.isascii():
        raise InvalidSignature(f"malformed {name} header")
    return value


def _keys(secrets: Sequence[str], to_key: Callable[[str], bytes | None] = text_key) -> list[bytes]:
    # A bare str is a Sequence[str] too: its one-character "secrets" would be forgeable.
    if isinstance(secrets, str):
        raise InvalidSignature("secrets must be a list, not a string")
    return [key for key in map(to_key, secrets) if key is not None]


def _check(
    keys: Sequence[bytes], payload: bytes, candidates: Sequence[bytes], algorithm: str = "sha256"
) -> None:
    # Empty and blank secrets were dropped: an empty HMAC key would let anyone sign.
    if not keys:
        raise InvalidSignature("no usable secret configured")
    if not any_match(keys, payload, candidates, algorithm):
        raise InvalidSignature("signature does not match")


def _fresh(timestamp: int, now: float, tolerance: int) -> None:
    if not math.isfinite(now):  # NaN compares false both ways: fail closed instead
        raise InvalidSignature("clock is not a finite number")
    # Both directions: a far-future timestamp would otherwise stay replayable for that long.
    if timestamp < now - tolerance:
        raise InvalidSignature("timestamp older than tolerance")
    if timestamp > now + tolerance:
        raise InvalidSignature("timestamp too far in the future")


class GitHubScheme(_SourceScheme):
    """GitHub: ``x-hub-signature-256: sha256=<hex HMAC-SHA256 of body>``, no timestamp."""

    def verify(self, body: bytes, headers: Mapping[str, str], secrets: Sequence[str], now: float) -> None:
        """Check the sha256 signature; the legacy sha1 header is ignored."""
        value = _required(headers, "x-hub-signature-256")
        signature = unhex(value.removeprefix("sha256="), 32) if value.startswith("sha256=") else None
        if signature is None:
            raise InvalidSignature("malformed x-hub-signature-256 header")
        _check(_keys(secrets), body, [signature])

    def identify(self, body: bytes, headers: Mapping[str, str]) -> DeliveryIdentity:
        """Delivery GUID header; ``{event}.{action}`` type."""
        return identity.github(body, headers)


class StripeScheme(_SourceScheme):
    """Stripe: ``stripe-signature: t=<ts>,v1=<hex>[,v1=...]`` over ``{t}.{body}``."""

    def verify(self, body: bytes, headers: Mapping[str, str], secrets: Sequence[str], now: float) -> None:
        """Check the timestamp window, then any v1 signature; v0 (test-mode) entries are ignored."""
        value = _required(headers, "stripe-signature")
        timestamps: list[str] = []
        signatures: list[bytes] = []
        for item in value.split(","):
            name, _, part = item.strip().partition("=")
            if name == "t":
                timestamps.append(part)
            elif name == "v1" and (signature := unhex(part, 32)) is not None:
                signatures.append(signature)
        timestamp = epoch_seconds(timestamps[0]) if len(timestamps) == 1 else None
        if timestamp is None:
            raise InvalidSignature("stripe-signature needs exactly one numeric t=")
        if not signatures:
            raise InvalidSignature("stripe-signature has no well-formed v1 signature")
        _fresh(timestamp, now, self.source.tolerance_seconds)
        _check(_keys(secrets), timestamps[0].encode() + b"." + body, signatures)

    def identify(self, body: bytes, headers: Mapping[str, str]) -> DeliveryIdentity:
        """Event ``id``, ``type`` and ``created`` from the body."""
        return identity.stripe(body, headers)


class StandardScheme(_SourceScheme):
    """Standard Webhooks / Svix: ``v1,<base64>`` entries over ``{id}.{timestamp}.{body}``."""

    def verify(self, body: bytes, headers: Mapping[str, str], secrets: Sequence[str], now: float) -> None:
        """Check the timestamp window, then any v1 entry against any ``whsec_`` key."""
        raw_id, raw_timestamp, raw_signature = standard_headers(headers)
        if raw_id is None or raw_timestamp is None or raw_signature is None:
            raise InvalidSignature("missing webhook-id, webhook-timestamp or webhook-signature header")
        if len(raw_id) > MAX_HEADER_CHARS or len(raw_signature) > MAX_HEADER_CHARS:
            raise InvalidSignature("malformed webhook headers")
        timestamp = epoch_seconds(raw_timestamp)
        id_bytes = utf8(raw_id)
        if timestamp is None or id_bytes is None:
            raise InvalidSignature("malformed webhook-id or webhook-timestamp header")
        signatures = []
        for entry in raw_signature.split():
            version, _, encoded = entry.partition(",")
            # Other versions (v1a is asymmetric ed25519) are skipped, as the spec asks.
            if version == "v1" and (signature := unbase64(encoded, 32)) is not None:
                signatures.append(signature)
        if not signatures:
            raise InvalidSignature("webhook-signature has no well-formed v1 entry")
        _fresh(timestamp, now, self.source.tolerance_seconds)
        _check(
            _keys(secrets, standard_key), id_bytes + b"." + raw_timestamp.encode() + b"." + body, signatures
        )

    def identify(self, body: bytes, headers: Mapping[str, str]) -> DeliveryIdentity:
        """``webhook-id`` header; body ``type`` and event ``timestamp``."""
        return identity.standard(body, headers)


class SlackScheme(_SourceScheme):
    """Slack: ``x-slack-signature: v0=<hex>`` over ``v0:{x-slack-request-timestamp}:{body}``."""

    def verify(self, body: bytes, headers: Mapping[str, str], secrets: Sequence[str], now: float) -> None:
        """Check the timestamp window, then the v0 signature."""
        raw_timestamp = _required(headers, "x-slack-request-timestamp")
        value = _required(headers, "x-slack-signature")
        timestamp = epoch_seconds(raw_timestamp)
        if timestamp is None:
            raise InvalidSignature("malformed x-slack-request-timestamp header")
        signature = unhex(value.removeprefix("v0="), 32) if value.startswith("v0=") else None
        if signature is None:
            raise InvalidSignature("malformed x-slack-signature header")
        _fresh(timestamp, now, self.source.tolerance_seconds)
        _check(_keys(secrets), b"v0:" + raw_timestamp.encode() + b":" + body, [signature])

    def identify(self, body: bytes, headers: Mapping[str, str]) -> DeliveryIdentity:
        """Events API ids, url_verification challenges, slash commands and interactivity."""
        return identity.slack(body, headers)


class ShopifyScheme(_SourceScheme):
    """Shopify: ``x-shopify-hmac-sha256: <base64 HMAC-SHA256 of body>``, no timestamp."""

    def verify(self, body: bytes, headers: Mapping[str, str], secrets: Sequence[str], now: float) -> None:
        """Check the base64 signature."""
        signature = unbase64(_required(headers, "x-shopify-hmac-sha256"), 32)
        if signature is None:
            raise InvalidSignature("malformed x-shopify-hmac-sha256 header")
        _check(_keys(secrets), body, [signature])

    def identify(self, body: bytes, headers: Mapping[str, str]) -> DeliveryIdentity:
        """Webhook id, topic and trigger time, all from headers."""
        return identity.shopify(body, headers)


class HmacScheme(_SourceScheme):
    """Any provider that sends ``<prefix><hex|base64 HMAC of body>`` in one header."""

    def verify(self, body: bytes, headers: Mapping[str, str], secrets: Sequence[str], now: float) -> None:
        """Check the configured header, prefix, encoding and algorithm."""
        name = (self.source.header or "").lower()
        value = _required(headers, name)
        size = DIGEST_SIZES[self.source.algorithm]
        signature = None
        if value.startswith(self.source.prefix):
            encoded = value[len(self.source.prefix) :]
            signature = unhex(encoded, size) if self.source.encoding == "hex" else unbase64(encoded, size)
        if signature is None:
            raise InvalidSignature(f"malformed {name} header")
        _check(_keys(secrets), body, [signature], self.source.algorithm)

    def identify(self, body: bytes, headers: Mapping[str, str]) -> DeliveryIdentity:
        """Configured id header or JSON field, else the body hash."""
        return identity.generic(self.source, body, headers)


# Typed as factories of Scheme so mypy checks that every class meets the protocol.
_SCHEMES: Mapping[str, Callable[[SourceConfig], Scheme]] = {
    "github": GitHubScheme,
    "stripe": StripeScheme,
    "standard": StandardScheme,
    "slack": SlackScheme,
    "shopify": ShopifyScheme,
}


def scheme_for(source: SourceConfig) -> Scheme:
    """The verifier for ``source``; ConfigError if its scheme or hmac options are unusable."""
    if source.scheme == "hmac":
        # load_config checks these too; repeated for sources built in code.
        if not source.header or not source.header.strip():
            raise ConfigError(f"source {source.name!r}: the hmac scheme needs a header")
        if source.encoding not in ("hex", "base64"):
            raise ConfigError(f"source {source.name!r}: encoding must be hex or base64")
        if source.algorithm not in DIGEST_SIZES:
            raise ConfigError(f"source {source.name!r}: algorithm must be sha1, sha256 or sha512")
        return HmacScheme(source)
    scheme = _SCHEMES.get(source.scheme)
    if scheme is None:
        raise ConfigError(f"source {source.name!r}: unknown scheme {source.scheme!r}")
    return scheme(source)


def check_secrets(source: SourceConfig, secrets: Sequence[str]) -> None:
    """Refuse, at cold start, resolved secrets that could never verify or would verify too much."""
    where = f"source {source.name!r}"
    if isinstance(secrets, str) or not secrets:
        raise ConfigError(f"{where}: no secrets resolved (need a non-empty list)")
    for number, secret in enumerate(secrets, start=1):
        if not isinstance(secret, str) or not secret.strip():
            raise ConfigError(f"{where}: secret #{number} is an empty secret")
        if secret != secret.strip():
            # Usually a stray newline from a secret store; it would fail every delivery.
            raise ConfigError(f"{where}: secret #{number} has leading or trailing whitespace")
        if source.scheme == "standard" and standard_key(secret) is None:
            raise ConfigError(f"{where}: secret #{number} is not whsec_<base64> or base64")
