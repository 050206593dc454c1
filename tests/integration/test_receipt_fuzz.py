"""Property: whatever arrives, the receiver answers a clean 2xx/4xx and never stores a forgery."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support import Harness

pytestmark = pytest.mark.slow  # fuzzing/chaos/load/benchmarks: `make check`, not `make test`

SOURCES = ["github", "stripe", "helpdesk", "slack", "shopify", "partner", "unknown", ""]
HEADER_NAMES = st.sampled_from(
    [
        "x-hub-signature-256",
        "x-github-delivery",
        "x-github-event",
        "stripe-signature",
        "webhook-id",
        "webhook-timestamp",
        "webhook-signature",
        "svix-id",
        "svix-timestamp",
        "svix-signature",
        "x-slack-signature",
        "x-slack-request-timestamp",
        "x-shopify-hmac-sha256",
        "x-shopify-webhook-id",
        "x-partner-signature",
        "x-partner-delivery",
        "content-length",
        "content-type",
    ]
) | st.text(min_size=1, max_size=20)
HEADER_VALUES = st.text(max_size=80) | st.sampled_from(
    [
        "sha256=",
        "sha256=zz",
        "t=1,v1=00",
        "v1,AAAA",
        "v0=abc",
        "1614265330",
        "-1",
        "99999999999999999999",
        "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
        "0",
    ]
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    source=st.sampled_from(SOURCES),
    headers=st.dictionaries(HEADER_NAMES, HEADER_VALUES, max_size=8),
    body=st.binary(max_size=400)
    | st.builds(lambda d: json.dumps(d).encode(), st.dictionaries(st.text(max_size=8), st.text(max_size=8))),
    as_base64=st.booleans(),
)
def test_arbitrary_requests_are_rejected_cleanly(
    harness: Harness, source: str, headers: dict[str, str], body: bytes, as_base64: bool
) -> None:
    # When anything at all is posted (no valid signature can be produced without the secret)
    response = harness.post(source, body, headers, base64=as_base64)
    # Then it is a clean rejection, never a 5xx, and nothing is stored or queued
    assert response.status in (400, 401, 404, 413), response
    assert harness.aws.inbox_items() == []
