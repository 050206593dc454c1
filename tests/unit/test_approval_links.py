"""Approval links: signed, expiring, per-reviewer, bound to the arguments; form tokens tied to the link."""

from __future__ import annotations

import dataclasses
import hashlib
from urllib.parse import parse_qsl, urlencode

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lockgate.approvals.links import (
    LinkClaims,
    LinkInvalid,
    form_token,
    new_claims,
    sign_link,
    verify_form_token,
    verify_link,
)
from lockgate.errors import ConfigError, LockgateError

FAST = settings(max_examples=300, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
NOW = 1_700_000_000
OLD = b"old-secret-0123456789abcdef"
NEW = b"new-secret-0123456789abcdef"
DIGEST = hashlib.sha256(b'{"amount":4200,"order":"1001"}').hexdigest()
APPROVAL = "appr-01HZX3"


def claims(**changes: object) -> LinkClaims:
    base = new_claims(APPROVAL, "alice@example.com", DIGEST, now=NOW, ttl_seconds=3600, nonce="n0nce-abc")
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def query_of(link: str) -> dict[str, str]:
    return dict(parse_qsl(link, keep_blank_values=True))


def reason_of(secrets: list[bytes], approval_id: str, query: dict[str, str], now: float = NOW) -> str:
    with pytest.raises(LinkInvalid) as caught:
        verify_link(secrets, approval_id, query, now)
    return caught.value.reason


def test_given_signed_link_when_verified_then_claims_come_back_unchanged() -> None:
    link = sign_link(NEW, claims())
    assert list(query_of(link)) == ["r", "e", "n", "d", "s"]
    assert not link.startswith("?")
    assert verify_link([NEW], APPROVAL, query_of(link), NOW) == claims()


def test_given_new_claims_without_nonce_then_a_fresh_urlsafe_nonce_and_expiry_from_ttl() -> None:
    first = new_claims(APPROVAL, "bob", DIGEST, now=NOW + 0.9, ttl_seconds=60)
    second = new_claims(APPROVAL, "bob", DIGEST, now=NOW, ttl_seconds=60)
    assert first.nonce != second.nonce
    assert first.expires_at == NOW + 60
    assert verify_link([NEW], APPROVAL, query_of(sign_link(NEW, first)), NOW) == first


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("r", "mallory@example.com"),
        ("e", str(NOW + 999_999)),
        ("n", "another-nonce"),
        ("d", hashlib.sha256(b"other arguments").hexdigest()),
        ("s", "A" * 43),
    ],
)
def test_given_one_tampered_field_when_verified_then_bad_signature(field: str, value: str) -> None:
    query = query_of(sign_link(NEW, claims())) | {field: value}
    assert reason_of([NEW], APPROVAL, query) == "bad signature"


def test_given_link_for_one_approval_when_used_on_another_id_then_bad_signature() -> None:
    query = query_of(sign_link(NEW, claims()))
    assert reason_of([NEW], "appr-OTHER", query) == "bad signature"


def test_given_expired_link_when_verified_then_expired_but_not_a_second_early() -> None:
    query = query_of(sign_link(NEW, claims(expires_at=NOW + 10)))
    assert verify_link([NEW], APPROVAL, query, NOW + 10).expires_at == NOW + 10
    assert reason_of([NEW], APPROVAL, query, now=NOW + 10.001) == "expired"
    assert reason_of([NEW], APPROVAL, query, now=float("nan")) == "expired"  # a broken clock fails closed


def test_given_forged_expired_link_then_reason_is_signature_not_expiry() -> None:
    query = query_of(sign_link(b"attacker-secret-0123456789", claims(expires_at=NOW - 10)))
    assert reason_of([NEW], APPROVAL, query) == "bad signature"


def test_given_wrong_secret_when_verified_then_bad_signature() -> None:
    query = query_of(sign_link(OLD, claims()))
    assert reason_of([NEW], APPROVAL, query) == "bad signature"


def test_given_rotation_when_old_and_new_secrets_configured_then_both_links_verify() -> None:
    for secret in (OLD, NEW):
        assert verify_link([NEW, OLD], APPROVAL, query_of(sign_link(secret, claims())), NOW) == claims()


@pytest.mark.parametrize("missing", ["r", "e", "n", "d", "s"])
def test_given_missing_or_empty_parameter_then_missing_parameter(missing: str) -> None:
    query = query_of(sign_link(NEW, claims()))
    assert reason_of([NEW], APPROVAL, {k: v for k, v in query.items() if k != missing}) == "missing parameter"
    assert reason_of([NEW], APPROVAL, query | {missing: ""}) == "missing parameter"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("r", "a" * 65),
        ("r", "alice\nadmin"),
        ("r", "alice,bob"),  # API Gateway joins repeated parameters with commas
        ("e", "0" + str(NOW + 3600)),  # leading zero: same number, different text
        ("e", "1" * 13),
        ("e", "١٢٣"),
        ("e", "-5"),
        ("n", "n" * 65),
        ("n", "nonce=="),
        ("d", DIGEST.upper()),
        ("d", DIGEST[:63]),
        ("s", "A" * 44),
        ("s", "é" * 43),
    ],
)
def test_given_oversized_or_odd_parameter_then_malformed(field: str, value: str) -> None:
    query = query_of(sign_link(NEW, claims())) | {field: value}
    assert reason_of([NEW], APPROVAL, query) == "malformed"


@pytest.mark.parametrize("approval_id", ["", "a/b", "x" * 129, "appr\n1", "appr#1"])
def test_given_odd_approval_id_in_path_then_malformed(approval_id: str) -> None:
    assert reason_of([NEW], approval_id, query_of(sign_link(NEW, claims()))) == "malformed"


def test_given_claims_that_no_link_could_carry_when_signing_then_value_error() -> None:
    with pytest.raises(ValueError, match="link format"):
        sign_link(NEW, claims(reviewer="alice\nbob"))
    with pytest.raises(ValueError, match="link format"):
        form_token(NEW, claims(fingerprint="not-a-digest"))


@pytest.mark.parametrize(
    "secrets", [[], [b""], [b"short"], b"0123456789abcdef0123", ["text-secret-0123456789"]]
)
def test_given_empty_or_weak_secrets_then_config_error_not_a_quiet_rejection(secrets: object) -> None:
    query = query_of(sign_link(NEW, claims()))
    with pytest.raises(ConfigError):
        verify_link(secrets, APPROVAL, query, NOW)  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        sign_link(b"short", claims())


def test_link_invalid_is_a_lockgate_error_with_a_reason() -> None:
    assert issubclass(LinkInvalid, LockgateError)
    assert LinkInvalid("expired").reason == "expired"


# --- form tokens ---------------------------------------------------------------------------------


def test_given_form_token_from_the_link_when_verified_then_accepted_under_rotation() -> None:
    verify_form_token([NEW], claims(), form_token(NEW, claims()))
    verify_form_token([NEW, OLD], claims(), form_token(OLD, claims()))


@pytest.mark.parametrize(
    "other",
    [
        {"reviewer": "bob"},
        {"nonce": "other-nonce"},
        {"approval_id": "appr-OTHER"},
        {"fingerprint": hashlib.sha256(b"x").hexdigest()},
        {"expires_at": NOW + 1},
    ],
)
def test_given_token_from_another_link_when_verified_then_bad_signature(other: dict[str, object]) -> None:
    token = form_token(NEW, claims(**other))
    with pytest.raises(LinkInvalid) as caught:
        verify_form_token([NEW], claims(), token)
    assert caught.value.reason == "bad signature"


def test_given_link_signature_used_as_form_token_then_refused() -> None:
    signature = query_of(sign_link(NEW, claims()))["s"]
    assert signature != form_token(NEW, claims())
    with pytest.raises(LinkInvalid):
        verify_form_token([NEW], claims(), signature)


@pytest.mark.parametrize(
    ("token", "reason"), [("", "missing parameter"), ("abc", "malformed"), ("é" * 43, "malformed")]
)
def test_given_missing_or_malformed_form_token_then_link_invalid(token: str, reason: str) -> None:
    with pytest.raises(LinkInvalid) as caught:
        verify_form_token([NEW], claims(), token)
    assert caught.value.reason == reason


def test_given_wrong_secret_form_token_then_bad_signature() -> None:
    with pytest.raises(LinkInvalid) as caught:
        verify_form_token([NEW], claims(), form_token(OLD, claims()))
    assert caught.value.reason == "bad signature"


# --- properties: nothing but LinkInvalid, for any input --------------------------------------------

any_text = st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=80)
any_value = st.one_of(
    any_text, st.none(), st.integers(), st.binary(max_size=20), st.lists(any_text, max_size=2)
)
keys = st.one_of(st.sampled_from(["r", "e", "n", "d", "s"]), any_text)


@FAST
@given(approval_id=any_text, query=st.dictionaries(keys, any_value, max_size=8), now=st.floats())
def test_property_verify_link_raises_only_link_invalid(
    approval_id: str, query: dict[str, str], now: float
) -> None:
    with pytest.raises(LinkInvalid):
        verify_link([NEW], approval_id, query, now)


@FAST
@given(field=st.sampled_from(["r", "e", "n", "d", "s"]), value=any_value, approval_id=any_text)
def test_property_one_fuzzed_parameter_on_a_real_link_never_verifies_differently(
    field: str, value: object, approval_id: str
) -> None:
    query: dict[str, object] = {**query_of(sign_link(NEW, claims())), field: value}
    try:
        got = verify_link([NEW], approval_id, query, NOW)  # type: ignore[arg-type]
    except LinkInvalid:
        return
    assert got == claims()  # only the untouched link (same value, same id) can pass


@FAST
@given(token=any_value)
def test_property_verify_form_token_raises_only_link_invalid(token: object) -> None:
    with pytest.raises(LinkInvalid):
        verify_form_token([NEW], claims(), token)  # type: ignore[arg-type]


@FAST
@given(
    reviewer=st.from_regex(r"[A-Za-z0-9._@-]{1,64}", fullmatch=True),
    nonce=st.from_regex(r"[A-Za-z0-9_-]{1,64}", fullmatch=True),
    expires=st.integers(min_value=0, max_value=999_999_999_999),
    fingerprint=st.binary(min_size=1, max_size=8).map(lambda b: hashlib.sha256(b).hexdigest()),
)
def test_property_any_well_formed_claims_roundtrip_through_the_query_string(
    reviewer: str, nonce: str, expires: int, fingerprint: str
) -> None:
    original = LinkClaims(APPROVAL, reviewer, expires, nonce, fingerprint)
    link = sign_link(OLD, original)
    reparsed = dict(parse_qsl(urlencode(query_of(link))))  # as a browser round-trip would
    assert verify_link([NEW, OLD], APPROVAL, reparsed, now=expires) == original


@pytest.mark.parametrize("query", [None, "r=a&e=1", ["r", "e"]])
def test_given_query_that_is_not_a_mapping_then_malformed(query: object) -> None:
    assert reason_of([NEW], APPROVAL, query) == "malformed"  # type: ignore[arg-type]
