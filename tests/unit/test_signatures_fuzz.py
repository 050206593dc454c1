"""Property tests: verify and identify fail only with their own error, for any input."""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lockgate.config import SourceConfig
from lockgate.errors import BadDelivery, ConfigError, InvalidSignature
from lockgate.webhooks.schemes import check_secrets, scheme_for
from lockgate.webhooks.signing import sign

pytestmark = pytest.mark.slow  # fuzzing/chaos/load/benchmarks: `make check`, not `make test`

FAST = settings(max_examples=200, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
NOW = 1_700_000_000

SOURCES = [
    SourceConfig("gh", "github", ("env:X",)),
    SourceConfig("pay", "stripe", ("env:X",)),
    SourceConfig("svix", "standard", ("env:X",)),
    SourceConfig("chat", "slack", ("env:X",)),
    SourceConfig("shop", "shopify", ("env:X",)),
    SourceConfig("acme", "hmac", ("env:X",), header="X-Sig", prefix="sha256=", id_field="data.id"),
    SourceConfig("b64", "hmac", ("env:X",), header="X-Sig", encoding="base64", algorithm="sha512"),
    SourceConfig("sha1", "hmac", ("env:X",), header="X-Sig", algorithm="sha1", event_type_header="X-Event"),
]
IDS = [f"{s.scheme}-{s.name}" for s in SOURCES]
HEADER_NAMES = [
    "x-hub-signature-256", "x-github-delivery", "x-github-event", "stripe-signature",
    "webhook-id", "webhook-timestamp", "webhook-signature", "svix-id", "svix-timestamp", "svix-signature",
    "x-slack-signature", "x-slack-request-timestamp", "x-shopify-hmac-sha256", "x-shopify-webhook-id",
    "x-shopify-event-id", "x-shopify-topic", "x-shopify-triggered-at", "x-sig", "x-event",
]  # fmt: skip

# Any code point, lone surrogates included: callers promise str, not well-formed text.
any_text = st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=120)
# Values shaped like real headers, so the fuzzing gets past the first format check.
shaped = st.one_of(
    any_text,
    st.builds(
        lambda p, t: p + t, st.sampled_from(["sha256=", "v0=", "v1,", "t=", "t=1700000000,v1="]), any_text
    ),
    st.from_regex(r"\At=-?[0-9]{0,14},v1=[0-9a-fA-F]{0,70}(,v0=[0-9a-f]*)?\Z"),
    st.from_regex(r"\A(v1,[A-Za-z0-9+/=]{0,48} ?){0,3}\Z"),
    st.integers(min_value=-(10**15), max_value=10**15).map(str),
)
headers_strategy = st.dictionaries(st.one_of(st.sampled_from(HEADER_NAMES), any_text), shaped, max_size=8)
secrets_strategy = st.lists(
    st.one_of(any_text, st.just(""), st.just("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"))
)
# Bodies: arbitrary bytes, and JSON / form shapes that reach the identity parsers' inner branches.
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | any_text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(any_text, inner, max_size=3),
    max_leaves=8,
)
JSON_KEYS = (
    "id type created event_id event_time event challenge action timestamp event_type trigger_id data command"
)
json_keys = st.sampled_from([*JSON_KEYS.split(), "payload"])
documents = st.dictionaries(json_keys, json_values, max_size=5).map(lambda d: json.dumps(d).encode())
forms = st.lists(st.tuples(json_keys, any_text), max_size=4).map(
    lambda pairs: "&".join(f"{k}={quote(v, errors='replace')}" for k, v in pairs).encode()
)
bodies = st.one_of(st.binary(max_size=256), documents, forms)
usable_secrets = st.text(alphabet=st.characters(exclude_categories=("Cs",)), min_size=1, max_size=40).filter(
    lambda s: s.strip() == s and s.strip() != ""
)


# Generating hostile inputs costs ~4 ms an example, so these two draw the source
# instead of multiplying 200 examples by eight sources; the cheap properties below
# run per source.
@FAST
@given(
    source=st.sampled_from(SOURCES),
    body=bodies,
    headers=headers_strategy,
    secrets=secrets_strategy,
    now=st.floats(allow_nan=True),
)
def test_verify_raises_only_invalid_signature(
    source: SourceConfig, body: bytes, headers: dict[str, str], secrets: list[str], now: float
) -> None:
    try:
        scheme_for(source).verify(body, headers, secrets, now)
    except InvalidSignature as exc:
        assert exc.reason and len(exc.reason) < 100
        assert all(len(s) < 8 or s not in exc.reason for s in secrets)


@FAST
@given(source=st.sampled_from(SOURCES), body=bodies, headers=headers_strategy)
def test_identify_raises_only_bad_delivery(
    source: SourceConfig, body: bytes, headers: dict[str, str]
) -> None:
    try:
        found = scheme_for(source).identify(body, headers)
    except BadDelivery:
        return
    assert found.delivery_id and len(found.delivery_id) <= 256 and found.delivery_id.isprintable()
    assert found.event_type
    assert found.event_time is None or isinstance(found.event_time, int)


@pytest.mark.parametrize("source", SOURCES, ids=IDS)
@FAST
@given(body=st.binary(max_size=512), secret=usable_secrets, now=st.integers(0, 2**33))
def test_sign_then_verify_roundtrips(source: SourceConfig, body: bytes, secret: str, now: int) -> None:
    key = "whsec_c2VjcmV0LWtleS1ieXRlcw==" if source.scheme == "standard" else secret
    headers = sign(source, key, body, now)
    scheme_for(source).verify(body, headers, ["", "some-other-secret", key], now + 0.5)


@pytest.mark.parametrize("source", SOURCES, ids=IDS)
@FAST
@given(body=st.binary(min_size=1, max_size=512), data=st.data())
def test_any_single_bit_flip_in_the_body_is_rejected(
    source: SourceConfig, body: bytes, data: st.DataObject
) -> None:
    key = "whsec_c2VjcmV0LWtleS1ieXRlcw==" if source.scheme == "standard" else "a-secret"
    headers = sign(source, key, body, NOW)
    bit = data.draw(st.integers(0, len(body) * 8 - 1), label="bit")
    flipped = bytearray(body)
    flipped[bit // 8] ^= 1 << (bit % 8)
    with pytest.raises(InvalidSignature, match="does not match"):
        scheme_for(source).verify(bytes(flipped), headers, [key], NOW)


@pytest.mark.parametrize("source", SOURCES[:3], ids=IDS[:3])
@FAST
@given(secrets=st.one_of(secrets_strategy, any_text))
def test_check_secrets_raises_only_config_error(source: SourceConfig, secrets: list[str]) -> None:
    try:
        check_secrets(source, secrets)
    except ConfigError:
        return
    # Accepted secrets are never blank, and standard ones decode to a key
    assert secrets and all(s.strip() for s in secrets)
