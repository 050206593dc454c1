"""Byte-level helpers shared by verification, identification and signing.

Every parser here returns None for bad input instead of raising, so callers
choose the one domain error to raise and no stray exception escapes.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

ALGORITHMS: Mapping[str, Callable[..., Any]] = {
    "sha1": hashlib.sha1,
    "sha256": hashlib.sha256,
    "sha512": hashlib.sha512,
}
DIGEST_SIZES = {"sha1": 20, "sha256": 32, "sha512": 64}
# Far beyond any real signature header; anything longer is refused unparsed.
MAX_HEADER_CHARS = 8192
WHSEC_PREFIX = "whsec_"
_HEX = re.compile(r"[0-9a-fA-F]+")
_DIGITS = re.compile(r"[0-9]{1,12}")  # ASCII only: str.isdigit() would accept "١٢٣"


def header(headers: Mapping[str, str], name: str) -> str | None:
    """The stripped value of header ``name`` (already lower-case), or None when absent or blank."""
    value = headers.get(name)
    if not isinstance(value, str):
        return None
    value = value.strip()
    return value or None


def first_header(headers: Mapping[str, str], *names: str) -> str | None:
    """The first of ``names`` that is present."""
    for name in names:
        value = header(headers, name)
        if value is not None:
            return value
    return None


def standard_headers(headers: Mapping[str, str]) -> tuple[str | None, str | None, str | None]:
    """Standard Webhooks id, timestamp and signature, under ``webhook-*`` or Svix's ``svix-*`` names."""
    return (
        first_header(headers, "webhook-id", "svix-id"),
        first_header(headers, "webhook-timestamp", "svix-timestamp"),
        first_header(headers, "webhook-signature", "svix-signature"),
    )


def utf8(text: str) -> bytes | None:
    """``text`` as UTF-8, or None if it holds lone surrogates."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return None


def epoch_seconds(text: str | None) -> int | None:
    """A decimal epoch-seconds header value, or None unless it is 1-12 ASCII digits."""
    if text is None or not _DIGITS.fullmatch(text):
        return None
    return int(text)


def unhex(text: str, size: int) -> bytes | None:
    """Hex (either case) of exactly ``size`` bytes, else None."""
    if len(text) != 2 * size or not _HEX.fullmatch(text):
        return None
    return bytes.fromhex(text)


def unbase64(text: str, size: int) -> bytes | None:
    """Padded standard base64 of exactly ``size`` bytes, else None."""
    if len(text) > 4 * size:
        return None
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):  # ValueError: non-ASCII characters
        return None
    return raw if len(raw) == size else None


def text_key(secret: str) -> bytes | None:
    """The HMAC key of schemes keyed by the secret's text; None for an empty or blank secret."""
    if not isinstance(secret, str) or not secret.strip():
        return None
    return utf8(secret)


def standard_key(secret: str) -> bytes | None:
    """The HMAC key of a Standard Webhooks secret: base64 after ``whsec_``; None if unusable."""
    if not isinstance(secret, str):
        return None
    encoded = secret.removeprefix(WHSEC_PREFIX)
    # Svix secrets are sometimes shown without padding; the official libraries re-pad.
    encoded += "=" * (-len(encoded) % 4)
    try:
        key = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        return None
    return key or None


def digest(key: bytes, payload: bytes, algorithm: str = "sha256") -> bytes:
    """HMAC of ``payload`` under ``key``."""
    return hmac.new(key, payload, ALGORITHMS[algorithm]).digest()


def any_match(keys: Iterable[bytes], payload: bytes, candidates: Sequence[bytes], algorithm: str) -> bool:
    """Whether any candidate signature is the HMAC of ``payload`` under any key (constant-time compare)."""
    for key in keys:
        expected = digest(key, payload, algorithm)
        for candidate in candidates:
            if hmac.compare_digest(expected, candidate):
                return True
    return False
