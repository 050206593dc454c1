"""Signed, expiring, per-reviewer approval links bound to the proposal's argument fingerprint.

A link is ``/approvals/{approval_id}?r=<reviewer>&e=<expires>&n=<nonce>&d=<fingerprint>&s=<sig>``.
The signature covers every claim, the approval id in the path included. The
confirmation page's POST carries a form token derived from the same claims under
a different prefix, so a link signature is never a valid form token.

Pure and stdlib-only: the caller reads the secrets and the clock and passes them in.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets as _random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import urlencode

from lockgate.errors import ConfigError, LockgateError

VERSION = "v1"
# Refuse weak keys at the door: a short key makes every link forgeable offline.
MIN_SECRET_BYTES = 16
# Explicit ASCII classes and fullmatch: "\d" accepts "١٢٣" and "$" accepts a trailing newline.
_APPROVAL_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
_REVIEWER = re.compile(r"[A-Za-z0-9._@-]{1,64}")
_EXPIRES = re.compile(r"0|[1-9][0-9]{0,11}")  # no leading zeros: one text per value
_NONCE = re.compile(r"[A-Za-z0-9_-]{1,64}")
_DIGEST = re.compile(r"[0-9a-f]{64}")  # lowercase only, as hashlib's hexdigest writes it
_SIG = re.compile(r"[A-Za-z0-9_-]{43}")  # base64url of a 32-byte HMAC-SHA256, no padding
_PARAMS = ("r", "e", "n", "d", "s")
_PATTERNS = (_REVIEWER, _EXPIRES, _NONCE, _DIGEST, _SIG)


class LinkInvalid(LockgateError):
    """An approval link or form token did not verify; the reason is for logs, never for the page."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class LinkClaims:
    """What a link says: who may decide which proposal, until when, about which exact arguments."""

    approval_id: str
    reviewer: str
    expires_at: int
    nonce: str
    fingerprint: str


def new_claims(
    approval_id: str, reviewer: str, fingerprint: str, now: float, ttl_seconds: int, nonce: str | None = None
) -> LinkClaims:
    """Claims for one reviewer's link, expiring ``ttl_seconds`` after ``now``."""
    return LinkClaims(
        approval_id=approval_id,
        reviewer=reviewer,
        expires_at=int(now) + int(ttl_seconds),
        nonce=_random.token_urlsafe(12) if nonce is None else nonce,
        fingerprint=fingerprint,
    )


def sign_link(secret: bytes, claims: LinkClaims) -> str:
    """The link's query string (no leading "?"); raises ValueError for claims no link could carry."""
    _check_secret(secret)
    _require_well_formed(claims)
    return urlencode(
        {
            "r": claims.reviewer,
            "e": str(claims.expires_at),
            "n": claims.nonce,
            "d": claims.fingerprint,
            "s": _mac(secret, _canonical(claims)),
        }
    )


def verify_link(
    secrets: Sequence[bytes], approval_id: str, query: Mapping[str, str], now: float
) -> LinkClaims:
    """The verified claims, or LinkInvalid; any secret may match (rotation). Never raises anything else."""
    _check_secrets(secrets)
    if not isinstance(query, Mapping):
        raise LinkInvalid("malformed")
    values = [query.get(name) for name in _PARAMS]
    if any(value is None or (isinstance(value, str) and not value) for value in values):
        raise LinkInvalid("missing parameter")
    reviewer, expires, nonce, fingerprint, signature = (
        _text(pattern, value) for pattern, value in zip(_PATTERNS, values, strict=True)
    )
    if not _text(_APPROVAL_ID, approval_id):
        raise LinkInvalid("malformed")
    if not (reviewer and expires and nonce and fingerprint and signature):
        raise LinkInvalid("malformed")
    claims = LinkClaims(approval_id, reviewer, int(expires), nonce, fingerprint)
    # Signature before expiry: only a genuine link may learn that it has expired.
    if not _matches_any(secrets, _canonical(claims), signature):
        raise LinkInvalid("bad signature")
    if not now <= claims.expires_at:  # written so that a NaN clock fails closed
        raise LinkInvalid("expired")
    return claims


def form_token(secret: bytes, claims: LinkClaims) -> str:
    """The confirmation form's hidden token, tied to this link's claims."""
    _check_secret(secret)
    _require_well_formed(claims)
    return _mac(secret, _form_message(claims))


def verify_form_token(secrets: Sequence[bytes], claims: LinkClaims, token: str) -> None:
    """Raise LinkInvalid unless ``token`` is this link's form token under any of the secrets."""
    _check_secrets(secrets)
    if token is None or token == "":
        raise LinkInvalid("missing parameter")
    given = _text(_SIG, token)
    if given is None or not _well_formed(claims):
        raise LinkInvalid("malformed")
    if not _matches_any(secrets, _form_message(claims), given):
        raise LinkInvalid("bad signature")


def _canonical(claims: LinkClaims) -> bytes:
    # Every field is validated to exclude "\n", so this encoding is unambiguous.
    expires = str(claims.expires_at)
    fields = (VERSION, claims.approval_id, claims.reviewer, expires, claims.nonce, claims.fingerprint)
    return "\n".join(fields).encode("ascii")


def _form_message(claims: LinkClaims) -> bytes:
    return b"form\n" + _canonical(claims)


def _mac(secret: bytes, message: bytes) -> str:
    tag = hmac.new(secret, message, hashlib.sha256).digest()
    return base64.urlsafe_b64encode(tag).rstrip(b"=").decode("ascii")


def _matches_any(secrets: Sequence[bytes], message: bytes, given: str) -> bool:
    # Try every secret (no early exit) so timing does not tell which one matched.
    given_bytes = given.encode("ascii")
    matched = False
    for secret in secrets:
        matched |= hmac.compare_digest(_mac(secret, message).encode("ascii"), given_bytes)
    return matched


def _well_formed(claims: object) -> bool:
    return (
        isinstance(claims, LinkClaims)
        and _text(_APPROVAL_ID, claims.approval_id) is not None
        and _text(_REVIEWER, claims.reviewer) is not None
        and type(claims.expires_at) is int
        and _text(_EXPIRES, str(claims.expires_at)) is not None
        and _text(_NONCE, claims.nonce) is not None
        and _text(_DIGEST, claims.fingerprint) is not None
    )


def _require_well_formed(claims: LinkClaims) -> None:
    if not _well_formed(claims):
        raise ValueError("claims do not fit the link format (see the limits in lockgate.approvals.links)")


def _text(pattern: re.Pattern[str], value: object) -> str | None:
    """``value`` if it is a string matching ``pattern`` in full, else None."""
    if isinstance(value, str) and pattern.fullmatch(value) is not None:
        return value
    return None


def _check_secret(secret: object) -> None:
    if not isinstance(secret, bytes) or len(secret) < MIN_SECRET_BYTES:
        raise ConfigError(f"approval link secret must be at least {MIN_SECRET_BYTES} bytes")


def _check_secrets(secrets: object) -> None:
    # A configuration fault, not a bad link: fail loudly rather than reject every reviewer quietly.
    if isinstance(secrets, bytes | str) or not isinstance(secrets, Sequence) or not secrets:
        raise ConfigError("approval link secrets must be a non-empty list of bytes")
    for secret in secrets:
        _check_secret(secret)
