"""Webhook signatures and delivery identity, scheme by scheme.

Known answers come from the providers' own documentation; everything else is
signed with lockgate.webhooks.signing.sign, which is itself checked against an
independent HMAC computed here.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Callable
from urllib.parse import quote

import pytest

from lockgate.config import SourceConfig
from lockgate.errors import BadDelivery, ConfigError, InvalidSignature
from lockgate.webhooks.schemes import DeliveryIdentity, Scheme, check_secrets, scheme_for
from lockgate.webhooks.signing import sign

NOW = 1_700_000_000
TOLERANCE = 300
SECRET, OLD_SECRET = "current-signing-secret", "previous-signing-secret"
WHSEC = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
WHSEC_OLD = "whsec_" + base64.b64encode(b"the previous 24-byte key").decode()

SOURCES = {
    "github": SourceConfig("gh", "github", ("env:GH",)),
    "stripe": SourceConfig("pay", "stripe", ("env:ST",), tolerance_seconds=TOLERANCE),
    "standard": SourceConfig("svix", "standard", ("env:SW",), tolerance_seconds=TOLERANCE),
    "slack": SourceConfig("chat", "slack", ("env:SL",), tolerance_seconds=TOLERANCE),
    "shopify": SourceConfig("shop", "shopify", ("env:SH",)),
    "hmac": SourceConfig(
        "acme",
        "hmac",
        ("env:AC",),
        header="X-Acme-Signature",
        prefix="sha256=",
        id_header="X-Acme-Delivery",
        event_type_field="event.kind",
    ),
}
SCHEMES = list(SOURCES)
TIMESTAMPED = ["stripe", "standard", "slack"]
BODIES = {
    "github": b'{"action":"opened","issue":{"number":7}}',
    "stripe": b'{"id":"evt_1NG8Du2eZvKYlo2C","object":"event","type":"charge.refunded","created":1699999990}',
    "standard": b'{"type":"contact.created","timestamp":"2023-11-14T22:13:10Z","data":{"id":"c_1"}}',
    "slack": (
        b'{"type":"event_callback","event_id":"Ev08MFMKH6","event_time":1699999999,'
        b'"event":{"type":"app_mention","text":"<@U1> refund order 1001"}}'
    ),
    "shopify": b'{"id":820982911946154508,"email":"jon@example.com"}',
    "hmac": b'{"id":"inv_1","event":{"kind":"invoice.paid"}}',
}
# Every header a scheme cannot verify without.
REQUIRED = {
    "github": ["x-hub-signature-256"],
    "stripe": ["stripe-signature"],
    "standard": ["webhook-id", "webhook-timestamp", "webhook-signature"],
    "slack": ["x-slack-signature", "x-slack-request-timestamp"],
    "shopify": ["x-shopify-hmac-sha256"],
    "hmac": ["x-acme-signature"],
}


def secrets_of(scheme: str) -> tuple[str, str]:
    """(current, previous) secrets in the scheme's format."""
    return (WHSEC, WHSEC_OLD) if scheme == "standard" else (SECRET, OLD_SECRET)


def signed(scheme: str, secret: str | None = None, now: int = NOW, **kwargs: str) -> dict[str, str]:
    return sign(SOURCES[scheme], secret or secrets_of(scheme)[0], BODIES[scheme], now, **kwargs)


def verify(
    scheme: str, body: bytes, headers: dict[str, str], secrets: list[str] | None = None, now: float = NOW
) -> None:
    scheme_for(SOURCES[scheme]).verify(body, headers, secrets or [secrets_of(scheme)[0]], now)


def identify(scheme: str, body: bytes, headers: dict[str, str]) -> DeliveryIdentity:
    return scheme_for(SOURCES[scheme]).identify(body, headers)


# --- known answers from the providers' documentation -------------------------------------------


def test_github_known_answer_from_its_docs() -> None:
    # Given GitHub's documented secret, body and signature
    headers = {
        "x-hub-signature-256": "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    }
    # When verified, then accepted; and sign() produces the same header
    verify("github", b"Hello, World!", headers, ["It's a Secret to Everybody"])
    produced = sign(SOURCES["github"], "It's a Secret to Everybody", b"Hello, World!", NOW)
    assert produced["x-hub-signature-256"] == headers["x-hub-signature-256"]


def test_standard_webhooks_known_answer_from_the_spec() -> None:
    body = b'{"test": 2432232314}'
    headers = {
        "webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek",
        "webhook-timestamp": "1614265330",
        "webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
    }
    verify("standard", body, headers, [WHSEC], now=1614265330)
    produced = sign(SOURCES["standard"], WHSEC, body, 1614265330, delivery_id="msg_p5jXN8AQM9LWM0D4loKWxJek")
    assert produced["webhook-signature"] == headers["webhook-signature"]


SLACK_DOC_BODY = (
    b"token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V"
    b"&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text="
    b"&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN"
    b"&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
)


def test_slack_known_answer_from_its_docs_is_a_slash_command() -> None:
    headers = {
        "x-slack-request-timestamp": "1531420618",
        "x-slack-signature": "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503",
    }
    verify("slack", SLACK_DOC_BODY, headers, ["8f742231b10e8888abcd99yyyzzz85a5"], now=1531420618)
    assert identify("slack", SLACK_DOC_BODY, headers) == DeliveryIdentity(
        "398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c", "command:/webhook-collect", None
    )


def _independent(scheme: str, headers: dict[str, str]) -> tuple[str, str]:
    """(header, value) computed straight from the provider's documented recipe, not via lockgate."""
    body, key = BODIES[scheme], SECRET.encode()
    if scheme == "github":
        return "x-hub-signature-256", "sha256=" + hmac.new(key, body, hashlib.sha256).hexdigest()
    if scheme == "stripe":
        mac = hmac.new(key, f"{NOW}.".encode() + body, hashlib.sha256).hexdigest()
        return "stripe-signature", f"t={NOW},v1={mac}"
    if scheme == "standard":
        raw = base64.b64decode(WHSEC.removeprefix("whsec_"))
        mac_bytes = hmac.new(raw, f"{headers['webhook-id']}.{NOW}.".encode() + body, hashlib.sha256).digest()
        return "webhook-signature", "v1," + base64.b64encode(mac_bytes).decode()
    if scheme == "slack":
        return "x-slack-signature", "v0=" + hmac.new(
            key, f"v0:{NOW}:".encode() + body, hashlib.sha256
        ).hexdigest()
    if scheme == "shopify":
        return "x-shopify-hmac-sha256", base64.b64encode(
            hmac.new(key, body, hashlib.sha256).digest()
        ).decode()
    return "x-acme-signature", "sha256=" + hmac.new(key, body, hashlib.sha256).hexdigest()


@pytest.mark.parametrize("scheme", SCHEMES)
def test_sign_matches_the_providers_recipe(scheme: str) -> None:
    # Given a delivery signed by the helper, when compared with a hand-made HMAC, then identical
    headers = signed(scheme)
    name, value = _independent(scheme, headers)
    assert headers[name] == value
    assert all(key == key.lower() for key in headers)


# --- verify: every scheme ------------------------------------------------------------------------


@pytest.mark.parametrize("scheme", SCHEMES)
def test_valid_signature_is_accepted(scheme: str) -> None:
    verify(scheme, BODIES[scheme], signed(scheme))


@pytest.mark.parametrize("scheme", SCHEMES)
def test_tampered_body_is_rejected(scheme: str) -> None:
    # Given a valid delivery, when one byte of the body changes, then the signature fails
    tampered = BODIES[scheme].replace(b"}", b" }", 1)
    with pytest.raises(InvalidSignature, match="does not match"):
        verify(scheme, tampered, signed(scheme))


@pytest.mark.parametrize("scheme", SCHEMES)
def test_wrong_secret_is_rejected(scheme: str) -> None:
    wrong = "whsec_" + base64.b64encode(b"an attacker's guess").decode() if scheme == "standard" else "guess"
    with pytest.raises(InvalidSignature, match="does not match"):
        verify(scheme, BODIES[scheme], signed(scheme, secret=wrong))


@pytest.mark.parametrize(("scheme", "name"), [(s, n) for s, names in REQUIRED.items() for n in names])
def test_missing_header_is_rejected(scheme: str, name: str) -> None:
    headers = signed(scheme)
    del headers[name]
    with pytest.raises(InvalidSignature, match="missing"):
        verify(scheme, BODIES[scheme], headers)


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("value", ["", "   ", "x" * 100_000, "ñ" * 70, "\x00"])
def test_garbage_in_every_required_header_is_rejected(scheme: str, value: str) -> None:
    for name in REQUIRED[scheme]:
        headers = signed(scheme) | {name: value}
        with pytest.raises(InvalidSignature):
            verify(scheme, BODIES[scheme], headers)


HEX64 = "ab" * 32
Mutation = Callable[[str], str]
MALFORMED: list[tuple[str, str, Mutation]] = [
    ("github", "x-hub-signature-256", lambda v: v.removeprefix("sha256=")),
    ("github", "x-hub-signature-256", lambda v: v.replace("sha256=", "sha1=")),
    ("github", "x-hub-signature-256", lambda v: v[:-2]),
    ("github", "x-hub-signature-256", lambda v: v[:-1] + "g"),
    ("github", "x-hub-signature-256", lambda v: v.replace("sha256=", "sha256= ")),
    ("stripe", "stripe-signature", lambda v: v.split(",")[1]),
    ("stripe", "stripe-signature", lambda v: v.split(",")[0]),
    ("stripe", "stripe-signature", lambda v: v.replace("t=", "t=abc")),
    ("stripe", "stripe-signature", lambda v: v.replace(str(NOW), "１７００００００００")),
    ("stripe", "stripe-signature", lambda v: v.replace(str(NOW), "1.7e9")),
    ("stripe", "stripe-signature", lambda v: v + f",t={NOW}"),
    ("stripe", "stripe-signature", lambda v: v.replace("v1=", "v0=")),
    ("stripe", "stripe-signature", lambda v: v[:-1]),
    ("stripe", "stripe-signature", lambda v: ",,,==,"),
    ("standard", "webhook-timestamp", lambda v: v + ".5"),
    ("standard", "webhook-timestamp", lambda v: "-" + v),
    ("standard", "webhook-timestamp", lambda v: "9" * 40),
    ("standard", "webhook-signature", lambda v: v.replace("v1,", "v2,")),
    ("standard", "webhook-signature", lambda v: v.replace("v1,", "v1")),
    ("standard", "webhook-signature", lambda v: v.rstrip("=")),
    ("standard", "webhook-signature", lambda v: v[:-4] + "!!!="),
    ("slack", "x-slack-request-timestamp", lambda v: v + "a"),
    ("slack", "x-slack-signature", lambda v: v.replace("v0=", "v1=")),
    ("slack", "x-slack-signature", lambda v: v.removeprefix("v0=")),
    ("slack", "x-slack-signature", lambda v: v + "00"),
    ("shopify", "x-shopify-hmac-sha256", lambda v: base64.b64decode(v).hex()),
    ("shopify", "x-shopify-hmac-sha256", lambda v: v.rstrip("=")),
    ("shopify", "x-shopify-hmac-sha256", lambda v: base64.b64encode(base64.b64decode(v)[:31]).decode()),
    ("shopify", "x-shopify-hmac-sha256", lambda v: v.replace("+", "-").replace("/", "_") + "-_"),
    ("hmac", "x-acme-signature", lambda v: v.removeprefix("sha256=")),
    ("hmac", "x-acme-signature", lambda v: "sha256=" + base64.b64encode(bytes.fromhex(v[7:])).decode()),
]


@pytest.mark.parametrize(("scheme", "name", "mutate"), MALFORMED)
def test_malformed_header_is_rejected(scheme: str, name: str, mutate: Mutation) -> None:
    headers = signed(scheme)
    headers[name] = mutate(headers[name])
    with pytest.raises(InvalidSignature):
        verify(scheme, BODIES[scheme], headers)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_rotation_accepts_old_and_new_secret_while_both_are_configured(scheme: str) -> None:
    # Given both secrets configured during a rotation
    current, previous = secrets_of(scheme)
    for secret in (current, previous):
        # When the provider signs with either, then it verifies
        verify(scheme, BODIES[scheme], signed(scheme, secret=secret), [previous, current])
    # And once the old secret is dropped, its signatures are refused
    with pytest.raises(InvalidSignature):
        verify(scheme, BODIES[scheme], signed(scheme, secret=previous), [current])


def _forge_with_empty_key(scheme: str, headers: dict[str, str]) -> str:
    body = BODIES[scheme]

    def mac(payload: bytes) -> bytes:
        return hmac.new(b"", payload, hashlib.sha256).digest()

    if scheme in ("github", "hmac"):
        return "sha256=" + mac(body).hex()
    if scheme == "shopify":
        return base64.b64encode(mac(body)).decode()
    if scheme == "slack":
        return "v0=" + mac(f"v0:{NOW}:".encode() + body).hex()
    if scheme == "stripe":
        return f"t={NOW},v1=" + mac(f"{NOW}.".encode() + body).hex()
    return "v1," + base64.b64encode(mac(f"{headers['webhook-id']}.{NOW}.".encode() + body)).decode()


@pytest.mark.parametrize("scheme", SCHEMES)
def test_an_empty_secret_never_verifies_even_against_an_empty_key(scheme: str) -> None:
    # Given an attacker who signs with an empty key and a deployment whose only secret is empty
    headers = signed(scheme)
    name, _ = _independent(scheme, headers)
    body = BODIES[scheme]
    forged = _forge_with_empty_key(scheme, headers)
    for secrets in ([""], ["   "], ["whsec_"] if scheme == "standard" else [""]):
        with pytest.raises(InvalidSignature, match="no usable secret"):
            verify(scheme, body, headers | {name: forged}, secrets)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_an_empty_secret_next_to_a_real_one_is_skipped(scheme: str) -> None:
    verify(scheme, BODIES[scheme], signed(scheme), ["", secrets_of(scheme)[0]])


@pytest.mark.parametrize("scheme", SCHEMES)
def test_a_bare_string_of_secrets_is_refused(scheme: str) -> None:
    # A str is a Sequence[str]: its one-character "secrets" must not become keys
    with pytest.raises(InvalidSignature, match="not a string"):
        scheme_for(SOURCES[scheme]).verify(BODIES[scheme], signed(scheme), secrets_of(scheme)[0], NOW)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_reasons_never_contain_the_secret_or_the_body(scheme: str) -> None:
    with pytest.raises(InvalidSignature) as caught:
        verify(scheme, BODIES[scheme] + b"!", signed(scheme))
    assert secrets_of(scheme)[0] not in caught.value.reason
    assert BODIES[scheme].decode() not in caught.value.reason
    assert len(caught.value.reason) < 100


# --- verify: timestamps --------------------------------------------------------------------------


@pytest.mark.parametrize("scheme", TIMESTAMPED)
def test_stale_timestamp_outside_tolerance_is_rejected(scheme: str) -> None:
    # Given a delivery signed at NOW, when it arrives TOLERANCE + 1 s later, then it is refused
    with pytest.raises(InvalidSignature, match="older"):
        verify(scheme, BODIES[scheme], signed(scheme), now=NOW + TOLERANCE + 1)


@pytest.mark.parametrize("scheme", TIMESTAMPED)
def test_future_timestamp_outside_tolerance_is_rejected(scheme: str) -> None:
    with pytest.raises(InvalidSignature, match="future"):
        verify(scheme, BODIES[scheme], signed(scheme), now=NOW - TOLERANCE - 1)


@pytest.mark.parametrize("scheme", TIMESTAMPED)
@pytest.mark.parametrize("skew", [-TOLERANCE, -TOLERANCE + 0.5, 0, TOLERANCE - 0.5, TOLERANCE])
def test_timestamp_just_inside_tolerance_is_accepted(scheme: str, skew: float) -> None:
    verify(scheme, BODIES[scheme], signed(scheme), now=NOW + skew)


@pytest.mark.parametrize(
    ("scheme", "name", "template"),
    [
        ("stripe", "stripe-signature", "t={ts},v1={rest}"),
        ("standard", "webhook-timestamp", "{ts}"),
        ("slack", "x-slack-request-timestamp", "{ts}"),
    ],
)
def test_timestamp_is_covered_by_the_signature(scheme: str, name: str, template: str) -> None:
    # Given a valid delivery, when only its timestamp moves by one second (still fresh), then refused
    headers = signed(scheme)
    rest = headers[name].split("v1=")[-1]
    headers[name] = template.format(ts=NOW + 1, rest=rest)
    with pytest.raises(InvalidSignature, match="does not match"):
        verify(scheme, BODIES[scheme], headers)


def test_tolerance_comes_from_the_source() -> None:
    strict = SourceConfig("pay", "stripe", ("env:ST",), tolerance_seconds=5)
    headers = sign(strict, SECRET, BODIES["stripe"], NOW)
    scheme_for(strict).verify(BODIES["stripe"], headers, [SECRET], NOW + 5)
    with pytest.raises(InvalidSignature):
        scheme_for(strict).verify(BODIES["stripe"], headers, [SECRET], NOW + 6)


# --- verify: scheme specifics --------------------------------------------------------------------


def test_stripe_accepts_any_of_several_v1_signatures_and_ignores_v0() -> None:
    # Given Stripe's header during a secret roll: two v1 entries (one ours) and a v0
    valid = signed("stripe")["stripe-signature"].split(",")[1]
    header = f"t={NOW}, v1={HEX64}, {valid}, v0={HEX64}, v1=nothex"
    verify("stripe", BODIES["stripe"], {"stripe-signature": header})


def test_stripe_v0_alone_is_not_enough_even_when_it_is_correct() -> None:
    v1 = signed("stripe")["stripe-signature"].split("v1=")[1]
    with pytest.raises(InvalidSignature, match="no well-formed v1"):
        verify("stripe", BODIES["stripe"], {"stripe-signature": f"t={NOW},v0={v1}"})


def test_standard_accepts_svix_header_names() -> None:
    headers = {name.replace("webhook-", "svix-"): v for name, v in signed("standard").items()}
    verify("standard", BODIES["standard"], headers)
    assert identify("standard", BODIES["standard"], headers).delivery_id.startswith("msg_")


def test_standard_accepts_a_plain_base64_secret_without_the_prefix() -> None:
    verify("standard", BODIES["standard"], signed("standard"), [WHSEC.removeprefix("whsec_")])


def test_standard_finds_its_v1_entry_among_other_versions_and_wrong_signatures() -> None:
    headers = signed("standard")
    wrong = "v1," + base64.b64encode(b"x" * 32).decode()
    headers["webhook-signature"] = f"v1a,{'A' * 86}== {wrong}  {headers['webhook-signature']} v2,abc"
    verify("standard", BODIES["standard"], headers)


def test_standard_webhook_id_is_covered_by_the_signature() -> None:
    headers = signed("standard") | {"webhook-id": "msg_someone_elses"}
    with pytest.raises(InvalidSignature, match="does not match"):
        verify("standard", BODIES["standard"], headers)


@pytest.mark.parametrize(
    ("algorithm", "encoding", "prefix"),
    [
        ("sha1", "hex", ""),
        ("sha256", "base64", ""),
        ("sha512", "hex", "sha512="),
        ("sha512", "base64", "v1="),
    ],
)
def test_generic_hmac_options(algorithm: str, encoding: str, prefix: str) -> None:
    source = SourceConfig(
        "x", "hmac", ("env:X",), header="X-Sig", algorithm=algorithm, encoding=encoding, prefix=prefix
    )
    headers = sign(source, SECRET, b"{}", NOW)
    raw = hmac.new(SECRET.encode(), b"{}", algorithm).digest()
    assert headers["x-sig"] == prefix + (raw.hex() if encoding == "hex" else base64.b64encode(raw).decode())
    scheme_for(source).verify(b"{}", headers, [SECRET], NOW)
    with pytest.raises(InvalidSignature):
        scheme_for(source).verify(b"{ }", headers, [SECRET], NOW)


def test_hex_signatures_are_accepted_in_upper_case() -> None:
    headers = signed("github")
    headers["x-hub-signature-256"] = "sha256=" + headers["x-hub-signature-256"][7:].upper()
    verify("github", BODIES["github"], headers)


# --- configuration -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("scheme", "secrets", "message"),
    [
        ("github", [], "no secrets"),
        ("github", "a-secret-string", "no secrets"),
        ("github", [""], "empty secret"),
        ("slack", ["ok", "   "], "empty secret"),
        ("shopify", ["ok", "\n"], "empty secret"),
        ("stripe", ["whsec_abc\n"], "whitespace"),
        ("standard", ["whsec_not base64!"], "whsec_"),
        ("standard", ["whsec_"], "whsec_"),
        ("standard", ["whsec_MfKQ9r8GKYqrTwjUPD8IL\u00e9ZIo2LaLaSw"], "whsec_"),
    ],
)
def test_check_secrets_refuses_unusable_secrets(scheme: str, secrets: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        check_secrets(SOURCES[scheme], secrets)
    if isinstance(secrets, list):
        assert all(len(s.strip()) < 8 or s not in str(caught.value) for s in secrets)


@pytest.mark.parametrize(
    ("scheme", "secrets"),
    [
        ("github", [SECRET, OLD_SECRET]),
        ("stripe", ["whsec_abc123"]),  # Stripe's secrets look like whsec_ too, but are used as text
        ("standard", [WHSEC, WHSEC_OLD]),
        ("standard", [WHSEC.removeprefix("whsec_").rstrip("=")]),
    ],
)
def test_check_secrets_accepts_usable_secrets(scheme: str, secrets: list[str]) -> None:
    check_secrets(SOURCES[scheme], secrets)


@pytest.mark.parametrize(
    "source",
    [
        SourceConfig("x", "carrier-pigeon", ("env:X",)),
        SourceConfig("x", "hmac", ("env:X",)),
        SourceConfig("x", "hmac", ("env:X",), header="X-Sig", encoding="base32"),
        SourceConfig("x", "hmac", ("env:X",), header="X-Sig", algorithm="md5"),
    ],
)
def test_scheme_for_refuses_unusable_sources(source: SourceConfig) -> None:
    with pytest.raises(ConfigError):
        scheme_for(source)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_scheme_for_returns_a_scheme(scheme: str) -> None:
    found: Scheme = scheme_for(SOURCES[scheme])
    assert callable(found.verify) and callable(found.identify)


# --- identify ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("scheme", "expected"),
    [
        ("github", DeliveryIdentity("72d3162e-cc78-11e3-81ab-4c9367dc0958", "issues.opened", None)),
        ("stripe", DeliveryIdentity("evt_1NG8Du2eZvKYlo2C", "charge.refunded", 1699999990)),
        ("standard", DeliveryIdentity("msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", "contact.created", 1700000000 - 10)),
        ("slack", DeliveryIdentity("Ev08MFMKH6", "app_mention", 1699999999)),
        ("shopify", DeliveryIdentity("b54557e4-bdd9-4b37-8a5f-bf7d70bcd043", "orders/create", NOW)),
        ("hmac", DeliveryIdentity("d-42", "invoice.paid", None)),
    ],
)
def test_signed_delivery_roundtrip_identifies(scheme: str, expected: DeliveryIdentity) -> None:
    # Given a delivery signed with an explicit id and type, when verified and identified, then both match
    headers = signed(scheme, delivery_id=expected.delivery_id, event_type=expected.event_type.split(".")[0])
    verify(scheme, BODIES[scheme], headers)
    assert identify(scheme, BODIES[scheme], headers) == expected


def test_github_identity_without_action_is_the_event_alone() -> None:
    headers = {"x-github-delivery": "d1", "x-github-event": "ping"}
    assert (
        identify("github", b'{"zen":"Keep it logically awesome.","hook_id":1}', headers).event_type == "ping"
    )


def test_github_form_encoded_payload_is_identified() -> None:
    body = b"payload=" + quote('{"action":"closed"}').encode()
    headers = {"x-github-delivery": "d1", "x-github-event": "pull_request"}
    assert identify("github", body, headers) == DeliveryIdentity("d1", "pull_request.closed", None)


@pytest.mark.parametrize("content_type", ["application/x-www-form-urlencoded", ""])
def test_github_form_body_without_a_payload_field_is_a_bad_delivery(content_type: str) -> None:
    headers = {"x-github-delivery": "d1", "x-github-event": "issues", "content-type": content_type}
    with pytest.raises(BadDelivery, match="form body has no payload field"):
        identify("github", b"action=opened&number=7", headers)


@pytest.mark.parametrize(
    ("scheme", "body", "headers"),
    [
        ("github", BODIES["github"], {"x-github-event": "issues"}),
        ("github", BODIES["github"], {"x-github-delivery": "   ", "x-github-event": "issues"}),
        ("stripe", b'{"type":"charge.refunded"}', {}),
        ("stripe", b'{"id":null}', {}),
        ("stripe", b'{"id":true}', {}),
        ("stripe", b'{"id":{"nested":1}}', {}),
        ("stripe", json.dumps({"id": "x" * 300}).encode(), {}),
        ("stripe", json.dumps({"id": "evt\n1"}).encode(), {}),
        ("standard", BODIES["standard"], {"webhook-timestamp": str(NOW)}),
        ("slack", b'{"type":"event_callback","event":{"type":"message"}}', {}),
        ("slack", b'{"type":"url_verification"}', {}),
        ("slack", b'{"type":"url_verification","challenge":"<script>\\u0000"}', {}),
        ("shopify", BODIES["shopify"], {"x-shopify-topic": "orders/create"}),
        ("hmac", BODIES["hmac"], {}),
    ],
)
def test_missing_or_unusable_delivery_id_is_a_bad_delivery(
    scheme: str, body: bytes, headers: dict[str, str]
) -> None:
    with pytest.raises(BadDelivery):
        identify(scheme, body, headers)


ID_HEADERS = {
    "github": {"x-github-delivery": "d1", "x-github-event": "issues"},
    "stripe": {},
    "standard": {"webhook-id": "msg_1", "webhook-timestamp": str(NOW)},
    "slack": {},
    "hmac": {"x-acme-delivery": "d1"},
}


@pytest.mark.parametrize("scheme", list(ID_HEADERS))
@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"not json",
        b"{",
        b"[1, 2]",
        b'"a string"',
        b"\xff\xfe{}",
        b"[" * 100_000,
        b'{"a": ' + b"9" * 5000 + b"}",
    ],
)
def test_unparsable_body_is_a_bad_delivery(scheme: str, body: bytes) -> None:
    with pytest.raises(BadDelivery):
        identify(scheme, body, ID_HEADERS[scheme])


def test_stripe_identity_tolerates_a_missing_type_and_an_iso_created() -> None:
    body = b'{"id":"evt_2","created":"2023-11-14T22:13:20Z"}'
    assert identify("stripe", body, {}) == DeliveryIdentity("evt_2", "unknown", NOW)


def test_standard_event_type_and_time_fall_back() -> None:
    # Given a body with event_type and no payload timestamp, then the header timestamp is the event time
    headers = {"webhook-id": "msg_1", "webhook-timestamp": str(NOW)}
    assert identify("standard", b'{"event_type":"user.created"}', headers) == DeliveryIdentity(
        "msg_1", "user.created", NOW
    )
    assert identify("standard", b"{}", headers).event_type == "unknown"


def test_slack_url_verification_returns_the_challenge_to_echo() -> None:
    challenge = "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"
    body = json.dumps(
        {"token": "Jhj5dZrVaK7ZwHHjRyZWjbDl", "challenge": challenge, "type": "url_verification"}
    )
    found = identify("slack", body.encode(), {})
    # Then the receiver can answer with the challenge; the fixed id makes repeats harmless
    assert found == DeliveryIdentity("url_verification", "url_verification", None, challenge)


def test_slack_interactivity_payload_is_identified_by_its_trigger_id() -> None:
    payload = {"type": "block_actions", "trigger_id": "1337.42.abcd", "actions": [{"action_id": "approve"}]}
    body = b"payload=" + quote(json.dumps(payload)).encode()
    assert identify("slack", body, {}) == DeliveryIdentity("1337.42.abcd", "block_actions", None)


def test_slack_form_without_trigger_id_falls_back_to_the_body_hash() -> None:
    body = b"payload=" + quote('{"type":"block_suggestion","value":"ab"}').encode()
    found = identify("slack", body, {})
    assert found == DeliveryIdentity("sha256:" + hashlib.sha256(body).hexdigest(), "block_suggestion", None)


def test_slack_envelope_without_event_id_falls_back_to_the_body_hash() -> None:
    body = b'{"type":"app_rate_limited","team_id":"T1","minute_rate_limited":1518467820}'
    assert identify("slack", body, {}).delivery_id == "sha256:" + hashlib.sha256(body).hexdigest()


@pytest.mark.parametrize(
    "body", [b"payload=%7Bnot-json", b"payload=%5B%5D", b"\xff=\xfe", b"ssl_check=1&token=x", b"text=hi"]
)
def test_slack_unparsable_form_is_a_bad_delivery(body: bytes) -> None:
    with pytest.raises(BadDelivery):
        identify("slack", body, {})


@pytest.mark.parametrize(
    ("triggered_at", "expected"),
    [
        ("2023-11-14T22:13:20.877041743Z", NOW),  # Shopify sends nanoseconds
        ("2023-11-14T17:13:20-05:00", NOW),
        ("2023-11-14T22:13:20", NOW),  # no zone: UTC
        ("yesterday", None),
        ("", None),
    ],
)
def test_shopify_identity_comes_from_headers(triggered_at: str, expected: int | None) -> None:
    headers = {
        "x-shopify-event-id": "e-1",
        "x-shopify-topic": "orders/paid",
        "x-shopify-triggered-at": triggered_at,
    }
    # The body isn't parsed: Shopify can be configured to send XML
    assert identify("shopify", b"<order/>", headers) == DeliveryIdentity("e-1", "orders/paid", expected)


def test_shopify_prefers_the_webhook_id_over_the_event_id() -> None:
    headers = {"x-shopify-webhook-id": "w-1", "x-shopify-event-id": "e-1"}
    assert identify("shopify", b"{}", headers) == DeliveryIdentity("w-1", "unknown", None)


@pytest.mark.parametrize(
    ("options", "headers", "expected"),
    [
        (
            {},
            {},
            DeliveryIdentity("sha256:" + hashlib.sha256(b'{"d":{"id":7}}').hexdigest(), "unknown", None),
        ),
        ({"id_field": "d.id"}, {}, DeliveryIdentity("7", "unknown", None)),
        (
            {"id_header": "X-Id", "id_field": "d.id"},
            {"x-id": "h-1"},
            DeliveryIdentity("h-1", "unknown", None),
        ),
        ({"id_header": "X-Id", "id_field": "d.id"}, {}, DeliveryIdentity("7", "unknown", None)),
        (
            {"event_type_header": "X-Event"},
            {"x-event": "thing.done"},
            DeliveryIdentity("sha256:" + hashlib.sha256(b'{"d":{"id":7}}').hexdigest(), "thing.done", None),
        ),
    ],
)
def test_generic_hmac_identity(
    options: dict[str, str], headers: dict[str, str], expected: DeliveryIdentity
) -> None:
    source = SourceConfig("x", "hmac", ("env:X",), header="X-Sig", **options)
    assert scheme_for(source).identify(b'{"d":{"id":7}}', headers) == expected


def test_generic_hmac_configured_id_field_missing_is_a_bad_delivery() -> None:
    source = SourceConfig("x", "hmac", ("env:X",), header="X-Sig", id_field="data.id")
    with pytest.raises(BadDelivery):
        scheme_for(source).identify(b'{"data":{}}', {})


def test_generic_hmac_parses_the_body_once_for_id_and_type() -> None:
    source = SourceConfig("x", "hmac", ("env:X",), header="X-Sig", id_field="d.id", event_type_field="d.kind")
    found = scheme_for(source).identify(b'{"d":{"id":"a-1","kind":"thing.done"}}', {})
    assert found == DeliveryIdentity("a-1", "thing.done", None)


@pytest.mark.parametrize(
    ("created", "expected"),
    [(True, None), (1.7e9, 1_700_000_000), (-5, None), (1e300, None), ("2023-11-14T22:13:20+00:00", NOW)],
)
def test_event_time_accepts_epoch_numbers_and_iso_strings_only(created: object, expected: int | None) -> None:
    body = json.dumps({"id": "evt_1", "created": created}).encode()
    assert identify("stripe", body, {}).event_time == expected


# --- hostile inputs that the fuzz tests reach only rarely ----------------------------------------


def test_a_lone_surrogate_in_the_webhook_id_is_rejected() -> None:
    headers = signed("standard") | {"webhook-id": "msg_\ud800"}
    with pytest.raises(InvalidSignature, match="malformed"):
        verify("standard", BODIES["standard"], headers)


def test_an_oversized_base64_signature_is_rejected_before_decoding() -> None:
    with pytest.raises(InvalidSignature, match="malformed"):
        verify("shopify", BODIES["shopify"], {"x-shopify-hmac-sha256": "A" * 4000})


@pytest.mark.parametrize("scheme", SCHEMES)
def test_non_string_secrets_are_skipped_not_crashed_on(scheme: str) -> None:
    secrets = [None, 42, secrets_of(scheme)[0]]
    scheme_for(SOURCES[scheme]).verify(BODIES[scheme], signed(scheme), secrets, NOW)  # type: ignore[list-item]


@pytest.mark.parametrize("scheme", TIMESTAMPED)
@pytest.mark.parametrize("clock", [float("nan"), float("inf"), float("-inf")])
def test_a_broken_clock_fails_closed(scheme: str, clock: float) -> None:
    with pytest.raises(InvalidSignature, match="clock"):
        verify(scheme, BODIES[scheme], signed(scheme), now=clock)


@pytest.mark.parametrize("secret", ["", "  ", "padded\n"])
def test_sign_refuses_the_secrets_check_secrets_refuses(secret: str) -> None:
    with pytest.raises(ConfigError):
        sign(SOURCES["github"], secret, b"{}", NOW)


def test_sign_marks_slack_form_bodies_as_form_encoded() -> None:
    assert sign(SOURCES["slack"], SECRET, SLACK_DOC_BODY, NOW)["content-type"] == (
        "application/x-www-form-urlencoded"
    )
    assert signed("slack")["content-type"] == "application/json"


def test_sign_puts_id_and_type_where_a_generic_source_reads_them() -> None:
    source = SourceConfig(
        "x", "hmac", ("env:X",), header="X-Sig", id_header="X-Id", event_type_header="X-Event"
    )
    headers = sign(source, SECRET, b"{}", NOW, delivery_id="d-9", event_type="thing.done")
    scheme_for(source).verify(b"{}", headers, [SECRET], NOW)
    assert scheme_for(source).identify(b"{}", headers) == DeliveryIdentity("d-9", "thing.done", None)
