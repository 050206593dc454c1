"""Defence in depth on the approval pages: cross-site posts are refused, and every refusal looks the same.

Table-driven over what a browser says about where a POST came from (``Origin``, ``Sec-Fetch-Site``),
and over every link and form check: the page and status never tell which check failed; the log does.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest

from lockgate.approvals.links import form_token, new_claims, sign_link
from lockgate.approvals.pages import FORM_TOKEN_FIELD
from lockgate.approvals.refusal import cross_site_reason, unusable_page
from tests.agent.conftest import AgentRig
from tests.agent.test_approvals import SECRET, Approvals, decisions_table
from tests.agent.toolkit import Effects
from tests.support import RecordingLog

HOST = "example.test"  # the host of the desk's base URL in tests.agent.test_approvals

HEADER_CASES = [
    # (case, headers besides Host, accepted)
    ("origin cross-site", {"origin": "https://evil.example"}, False),
    ("origin same host, other port", {"origin": "https://example.test:8443"}, False),
    ("origin same-origin", {"origin": "https://example.test"}, True),
    ("origin absent (token alone)", {}, True),
    ('origin "null"', {"origin": "null"}, False),
    # what a browser sends from our own page: its Referrer-Policy no-referrer makes the Origin "null"
    ('origin "null", sec-fetch-site same-origin', {"origin": "null", "sec-fetch-site": "same-origin"}, True),
    ('origin "null", sec-fetch-site cross-site', {"origin": "null", "sec-fetch-site": "cross-site"}, False),
    ("sec-fetch-site cross-site", {"sec-fetch-site": "cross-site"}, False),
    ("sec-fetch-site same-site", {"sec-fetch-site": "same-site"}, False),
    ("sec-fetch-site same-origin", {"sec-fetch-site": "same-origin"}, True),
    ("sec-fetch-site none", {"sec-fetch-site": "none"}, True),
    ("sec-fetch-site unknown value", {"sec-fetch-site": "sideways"}, False),
    (
        "both same-origin",
        {"origin": "https://example.test", "sec-fetch-site": "same-origin"},
        True,
    ),
    (
        "same-origin fetch site but a cross-site origin",
        {"origin": "https://evil.example", "sec-fetch-site": "same-origin"},
        False,
    ),
    (
        "same origin but a cross-site fetch site",
        {"origin": "https://example.test", "sec-fetch-site": "cross-site"},
        False,
    ),
]


@pytest.fixture
def logged(rig: AgentRig) -> tuple[Approvals, RecordingLog]:
    log = RecordingLog()
    return Approvals(rig, Effects(), log=log), log


@pytest.mark.parametrize(("case", "headers", "accepted"), HEADER_CASES, ids=[c[0] for c in HEADER_CASES])
def test_a_post_is_decided_only_when_its_headers_do_not_say_another_site_sent_it(
    logged: tuple[Approvals, RecordingLog], case: str, headers: dict[str, str], accepted: bool
) -> None:
    flow, log = logged
    # Given alice's real link and the real form token from her page
    approval_id = flow.propose_payment()
    query = flow.link(approval_id, "alice")
    form = flow.form(approval_id, query, "approve")
    # When the form is posted with these headers
    page = flow.desk.decide(approval_id, query, form, {"host": HOST, **headers})
    rows = decisions_table(flow)
    if accepted:
        # Then alice's approval is the one row in Decisions, and the page says so
        assert page.status == 200 and "<h1>Approved</h1>" in page.body
        assert [(r["reviewer"]["S"], r["verdict"]["S"]) for r in rows] == [("alice", "approve")]
        assert log.at("warning") == []
    else:
        # Then nothing is decided, the page is the neutral one, and only the log says why
        assert rows == [] and flow.queued_events() == []
        assert (page.status, page.body) == (unusable_page().status, unusable_page().body)
        (refused,) = log.at("warning")
        assert refused["check"] == "origin" and refused["reason"].split()[0] in ("origin", "sec-fetch-site")
        # And the same link still works from the reviewer's own page afterwards
        assert flow.desk.decide(approval_id, query, form, {"host": HOST}).status == 200
        assert len(decisions_table(flow)) == 1


@pytest.mark.parametrize(
    ("headers", "reason"),
    [
        ({"origin": "https://evil.example"}, "origin cross-site"),
        ({"origin": "https://example.test"}, None),
        ({"origin": "HTTPS://EXAMPLE.TEST"}, None),
        ({"origin": "null"}, "origin null"),
        ({"origin": "null", "sec-fetch-site": "same-origin"}, None),
        ({"origin": "null", "sec-fetch-site": "same-site"}, "sec-fetch-site same-site"),
        ({"origin": "ftp://example.test"}, "origin cross-site"),
        ({"origin": "https://example.test.evil.example"}, "origin cross-site"),
        ({"origin": "https://[::1"}, "origin malformed"),
        ({"origin": "https://example.test", "host": ""}, "origin cross-site"),  # nothing to compare with
        ({"sec-fetch-site": "Same-Origin"}, None),
        ({"sec-fetch-site": "cross-site"}, "sec-fetch-site cross-site"),
        ({"sec-fetch-site": "same-site"}, "sec-fetch-site same-site"),
        ({}, None),
    ],
)
def test_cross_site_reason_table(headers: dict[str, str], reason: str | None) -> None:
    assert cross_site_reason({"host": HOST, **headers}) == reason


def _tampered(
    flow: Approvals, check: str, delivery: str = "d-1"
) -> tuple[str, dict[str, str], dict[str, str], dict[str, str]]:
    """A proposal id, link, form and headers where exactly ``check`` fails."""
    approval_id = flow.propose_payment(delivery=delivery)
    query = flow.link(approval_id, "alice")
    form = flow.form(approval_id, query, "approve")
    headers = {"host": HOST}
    if check == "bad signature":
        query = {**query, "s": query["s"][::-1]}
    elif check == "expired link":
        flow.rig.clock.advance(25 * 3600)
    elif check == "unknown proposal":  # a genuinely signed link and form for an id that was never proposed
        approval_id = "ap_" + "0" * 24
        claims = new_claims(approval_id, "alice", query["d"], flow.rig.clock.now(), 3600)
        query = dict(parse_qsl(sign_link(SECRET, claims)))
        form = {**form, FORM_TOKEN_FIELD: form_token(SECRET, claims)}
    elif check == "changed arguments":  # the stored proposal no longer matches what the link was signed for
        flow.rig.aws.client("dynamodb").update_item(
            TableName=flow.rig.aws.names["ApprovalsTable"],
            Key={"approval_id": {"S": approval_id}},
            UpdateExpression="SET args = :a",
            ExpressionAttributeValues={":a": {"S": '{"amount": 8000}'}},
        )
    elif check == "reviewer not allowed":  # a genuinely signed link, for a reviewer without the role
        proposal = flow.proposals.get(approval_id)
        assert proposal is not None
        query = dict(parse_qsl(urlsplit(flow.desk.signer.link_for(proposal, "carol")).query))
    elif check == "bad form token":
        form = {**form, FORM_TOKEN_FIELD: "x" * 43}
    elif check == "no decision":
        form = {**form, "decision": "maybe"}
    elif check == "cross-site post":
        headers = {**headers, "origin": "https://evil.example", "sec-fetch-site": "cross-site"}
    return approval_id, query, {**form, **query}, headers


CHECKS = [
    "bad signature",
    "expired link",
    "unknown proposal",
    "changed arguments",
    "reviewer not allowed",
    "bad form token",
    "no decision",
    "cross-site post",
]


def test_every_failed_check_shows_the_same_page_and_logs_its_own_reason(rig: AgentRig) -> None:
    pages: dict[str, tuple[int, str]] = {}
    reasons: dict[str, tuple[Any, Any]] = {}
    for n, check in enumerate(CHECKS):
        # Given a fresh proposal and a link or form where only this check fails
        log = RecordingLog()
        flow = Approvals(rig, Effects(), log=log)
        rows_before = len(decisions_table(flow))
        approval_id, query, form, headers = _tampered(flow, check, delivery=f"d-{n}")
        # When the form is posted
        page = flow.desk.decide(approval_id, query, form, headers)
        # Then nothing was decided
        assert len(decisions_table(flow)) == rows_before, check
        pages[check] = (page.status, page.body)
        (line,) = log.at("warning")
        reasons[check] = (line["check"], line["reason"])
    # And every refusal is the same neutral page, which names no check
    assert set(pages.values()) == {(unusable_page().status, unusable_page().body)}
    assert "This link cannot be used" in unusable_page().body
    for word in ("expired", "signature", "token", "changed", "reviewer", "origin"):
        assert word not in unusable_page().body.lower()
    # And the log tells them apart
    assert len(set(reasons.values())) == len(CHECKS), reasons


@pytest.mark.parametrize("check", ["bad signature", "expired link", "unknown proposal", "changed arguments"])
def test_opening_a_bad_link_shows_the_same_neutral_page(rig: AgentRig, check: str) -> None:
    flow = Approvals(rig, Effects())
    approval_id, query, _, _ = _tampered(flow, check)
    page = flow.desk.show(approval_id, query)
    assert (page.status, page.body) == (unusable_page().status, unusable_page().body)
    assert decisions_table(flow) == []
