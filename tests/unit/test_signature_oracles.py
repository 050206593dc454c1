"""The ecosystem's own signers and published test vectors as oracles for our six verifiers.

Our verifiers are small on purpose (the receiver's cold start), and their other tests sign by hand,
which would agree with a misreading of a provider's scheme. Here the provider's official library
signs (``standardwebhooks``, ``stripe``, ``slack_sdk``: dev dependencies only), or the provider
publishes the vector (GitHub's docs, the Standard Webhooks spec, RFC 2202 / RFC 4231 for plain
HMAC), and two things must hold:

- what the library signs, we accept;
- where the library refuses (tampered body, another secret, a stale timestamp), we refuse too.

The one place we are deliberately stricter is named: Stripe's library accepts a timestamp from the
far future; we refuse it (a future timestamp would stay replayable for that long).
"""

from __future__ import annotations

import base64
import secrets as random_secrets
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

import pytest
import stripe
from hypothesis import given, settings
from hypothesis import strategies as st
from slack_sdk.signature import Clock, SignatureVerifier
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from lockgate.config import SourceConfig
from lockgate.errors import InvalidSignature
from lockgate.webhooks.schemes import scheme_for

TOLERANCE = 300
BODIES = st.text(min_size=1, max_size=400).map(str.encode)
EXAMPLES = settings(max_examples=40, deadline=None)


def ours(
    scheme: str, body: bytes, headers: Mapping[str, str], secret: str, now: float, **options: Any
) -> bool:
    """Whether Lockgate's verifier for ``scheme`` accepts this delivery."""
    source = SourceConfig(
        name="oracle", scheme=scheme, secrets=(secret,), tolerance_seconds=TOLERANCE, **options
    )
    try:
        scheme_for(source).verify(body, headers, [secret], now)
    except InvalidSignature:
        return False
    return True


def mutated(case: str, secret: str, other: str, now: float, body: bytes) -> tuple[str, float, bytes]:
    """(the secret that signs, the time it signs at, the body sent) for one refusal case."""
    signed_with = other if case == "another secret" else secret
    at = now + {"ten minutes old": -600, "ten minutes ahead": 600}.get(case, 0)
    return signed_with, at, body + b" " if case == "body changed" else body


def refuses(check: Callable[[], object], *errors: type[Exception]) -> bool:
    """Whether the library's own verifier refuses (raises one of its errors)."""
    try:
        check()
    except errors:
        return True
    return False


# ---- Standard Webhooks (Svix) -------------------------------------------------------------------


def standard_secret() -> str:
    return "whsec_" + base64.b64encode(random_secrets.token_bytes(24)).decode()


def standard_headers(secret: str, msg_id: str, body: bytes, at: float) -> dict[str, str]:
    signature = Webhook(secret).sign(msg_id, datetime.fromtimestamp(at, tz=UTC), body.decode())
    return {"webhook-id": msg_id, "webhook-timestamp": str(int(at)), "webhook-signature": signature}


def test_the_standard_webhooks_published_vector_verifies() -> None:
    # Given the example delivery the Standard Webhooks spec publishes, at its own time
    secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    headers = {
        "webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek",
        "webhook-timestamp": "1614265330",
        "webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
    }
    body = b'{"test": 2432232314}'
    # Then we accept it, and refuse it with one byte changed
    assert ours("standard", body, headers, secret, 1614265330)
    assert not ours("standard", body + b" ", headers, secret, 1614265330)


@EXAMPLES
@given(body=BODIES, msg_id=st.from_regex(r"msg_[A-Za-z0-9]{1,40}", fullmatch=True))
def test_what_the_standard_webhooks_library_signs_we_accept(body: bytes, msg_id: str) -> None:
    secret, now = standard_secret(), time.time()
    headers = standard_headers(secret, msg_id, body, now)
    assert Webhook(secret).verify(body, headers, json_parse=False) is None  # the library accepts
    assert ours("standard", body, headers, secret, now)


@pytest.mark.parametrize(
    "case",
    ["body changed", "another secret", "ten minutes old", "ten minutes ahead", "no v1 entry", "rotated key"],
)
def test_where_the_standard_webhooks_library_decides_we_decide_the_same(case: str) -> None:
    secret, other, now, body = standard_secret(), standard_secret(), time.time(), b'{"type":"invoice.paid"}'
    signed_with, at, sent_body = mutated(case, secret, other, now, body)
    headers = standard_headers(signed_with, "msg_1", body, at)
    if case == "no v1 entry":
        headers["webhook-signature"] = headers["webhook-signature"].replace("v1,", "v2,")
    if case == "rotated key":  # two entries, one from the old key: either verifies
        headers["webhook-signature"] += " " + standard_headers(other, "msg_1", body, at)["webhook-signature"]
    library_refuses = refuses(
        lambda: Webhook(secret).verify(sent_body, headers, json_parse=False), WebhookVerificationError
    )
    assert library_refuses is (case != "rotated key")
    assert ours("standard", sent_body, headers, secret, now) is not library_refuses


# ---- Stripe --------------------------------------------------------------------------------------


@EXAMPLES
@given(body=BODIES, secret=st.from_regex(r"whsec_[A-Za-z0-9]{8,40}", fullmatch=True))
def test_what_stripes_library_signs_we_accept(body: bytes, secret: str) -> None:
    now = int(time.time())
    header = stripe.WebhookSignature.generate_signature_header(body.decode(), secret, timestamp=now)
    assert stripe.WebhookSignature.verify_header(body, header, secret, tolerance=TOLERANCE)
    assert ours("stripe", body, {"stripe-signature": header}, secret, now)


STRIPE_CASES = [
    "body changed",
    "another secret",
    "ten minutes old",
    "v0 only",
    "rotated secret",
    "ten minutes ahead",
]


@pytest.mark.parametrize("case", STRIPE_CASES)
def test_where_stripes_library_decides_we_decide_the_same_or_stricter(case: str) -> None:
    secret, other, now, body = "whsec_current", "whsec_previous", int(time.time()), b'{"id":"evt_1"}'
    signed_with, at, sent_body = mutated(case, secret, other, now, body)
    header = stripe.WebhookSignature.generate_signature_header(body.decode(), signed_with, timestamp=int(at))
    if case == "v0 only":
        header = header.replace("v1=", "v0=")
    if case == "rotated secret":  # while a secret is rolled, Stripe sends one v1 per active secret
        old = stripe.WebhookSignature.generate_signature_header(body.decode(), other, timestamp=at)
        header = old + ",v1=" + header.split(",v1=")[1]
    library_refuses = refuses(
        lambda: stripe.WebhookSignature.verify_header(sent_body, header, secret, tolerance=TOLERANCE),
        stripe.SignatureVerificationError,
    )
    accepted = ours("stripe", sent_body, {"stripe-signature": header}, secret, now)
    if case == "ten minutes ahead":
        # The library accepts a future timestamp; we refuse it (it would be replayable until then).
        assert not library_refuses and not accepted
        return
    assert library_refuses is (case != "rotated secret")
    assert accepted is not library_refuses


# ---- Slack ---------------------------------------------------------------------------------------


class _At(Clock):
    """slack_sdk's clock, fixed at ``now``."""

    def __init__(self, now: float) -> None:
        self._now = now

    def now(self) -> float:
        return self._now


@EXAMPLES
@given(body=BODIES, secret=st.from_regex(r"[0-9a-f]{32}", fullmatch=True))
def test_what_slacks_library_signs_we_accept(body: bytes, secret: str) -> None:
    now = time.time()
    verifier = SignatureVerifier(secret, clock=_At(now))
    timestamp = str(int(now))
    signature = verifier.generate_signature(timestamp=timestamp, body=body)
    assert signature is not None and verifier.is_valid(body, timestamp, signature)
    headers = {"x-slack-request-timestamp": timestamp, "x-slack-signature": signature}
    assert ours("slack", body, headers, secret, now)


@pytest.mark.parametrize("case", ["body changed", "another secret", "ten minutes old", "ten minutes ahead"])
def test_where_slacks_library_decides_we_decide_the_same(case: str) -> None:
    secret, now, body = "8f742231b10e8888abcd99aaaaaa85a5", time.time(), b"payload=%7B%22type%22%3A%22x%22%7D"
    signed_with, at, sent_body = mutated(case, secret, "f" * 32, now, body)
    timestamp = str(int(at))
    signature = SignatureVerifier(signed_with).generate_signature(timestamp=timestamp, body=body)
    assert signature is not None
    library_accepts = SignatureVerifier(secret, clock=_At(now)).is_valid(sent_body, timestamp, signature)
    headers = {"x-slack-request-timestamp": timestamp, "x-slack-signature": signature}
    assert not library_accepts
    assert not ours("slack", sent_body, headers, secret, now)


# ---- GitHub, Shopify and plain HMAC: published vectors -------------------------------------------

# GitHub's docs ("Validating webhook deliveries") publish this secret, payload and signature.
GITHUB_SECRET, GITHUB_BODY = "It's a Secret to Everybody", b"Hello, World!"
GITHUB_SIGNATURE = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
# RFC 2202 / RFC 4231 test case 2: key "Jefe", data "what do ya want for nothing?".
RFC_KEY, RFC_DATA = "Jefe", b"what do ya want for nothing?"
RFC_DIGESTS = {
    "sha1": "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79",
    "sha256": "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
    "sha512": "164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea250554"
    "9758bf75c05a994a6d034f65f8f0e6fdcaeab1a34d4a6b4b636e070a38bce737",
}


def test_githubs_published_vector_verifies_and_a_changed_byte_does_not() -> None:
    headers = {"x-hub-signature-256": GITHUB_SIGNATURE}
    assert ours("github", GITHUB_BODY, headers, GITHUB_SECRET, time.time())
    assert not ours("github", GITHUB_BODY.replace(b"!", b"?"), headers, GITHUB_SECRET, time.time())
    assert not ours("github", GITHUB_BODY, headers, GITHUB_SECRET + " ", time.time())


def test_shopify_verifies_the_rfc_4231_digest_in_base64() -> None:
    # Shopify's header is the base64 HMAC-SHA256 of the body: the RFC's digest, base64-encoded.
    header = base64.b64encode(bytes.fromhex(RFC_DIGESTS["sha256"])).decode()
    assert ours("shopify", RFC_DATA, {"x-shopify-hmac-sha256": header}, RFC_KEY, time.time())
    assert not ours("shopify", RFC_DATA + b".", {"x-shopify-hmac-sha256": header}, RFC_KEY, time.time())


@pytest.mark.parametrize("algorithm", sorted(RFC_DIGESTS))
@pytest.mark.parametrize("encoding", ["hex", "base64"])
def test_plain_hmac_verifies_the_published_digests(algorithm: str, encoding: str) -> None:
    digest = bytes.fromhex(RFC_DIGESTS[algorithm])
    value = "sig=" + (digest.hex() if encoding == "hex" else base64.b64encode(digest).decode())
    options = {"header": "X-Signature", "prefix": "sig=", "encoding": encoding, "algorithm": algorithm}
    assert ours("hmac", RFC_DATA, {"x-signature": value}, RFC_KEY, time.time(), **options)
    assert not ours("hmac", RFC_DATA, {"x-signature": value}, "jefe", time.time(), **options)
