"""Approval pages: escaped, script-free, uncacheable, unframeable; and a form parser that never raises."""

from __future__ import annotations

import dataclasses
import re
from html.parser import HTMLParser
from urllib.parse import urlencode

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lockgate.approvals.pages import MAX_FORM_BYTES, Page, outcome_page, parse_form
from lockgate.approvals.review_page import UNVERIFIED_LABEL, Decided, ProposalView, confirmation_page

FAST = settings(max_examples=300, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
NOW = 1_700_000_000
QUERY = "r=alice%40example.com&e=1700086400&n=n0nce&d=" + "a" * 64 + "&s=" + "S" * 43
FORM = "application/x-www-form-urlencoded"
HOSTILE = [
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(1)>',
    "'><svg onload=alert(1)>",
    "@everyone @here",
]
EXPECTED_HEADERS = {
    "content-type": "text/html; charset=utf-8",
    "cache-control": "no-store",
    "pragma": "no-cache",
    "x-frame-options": "DENY",
    "content-security-policy": (
        "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; "
        "frame-ancestors 'none'; base-uri 'none'"
    ),
    "referrer-policy": "no-referrer",
    "x-content-type-options": "nosniff",
}


def view(**changes: object) -> ProposalView:
    base = ProposalView(
        approval_id="appr-01HZX3",
        task="refund_requests",
        tool="issue_refund",
        summary="Refund $42.00 to customer@example.com for order #1001",
        details=[
            ("Amount", "$42.00"),
            ("Customer", "customer@example.com"),
            ("Email to send", "Hi,\n\nYour refund of $42.00 is on its way.\n\nThanks"),
        ],
        unverified_reason="The customer says the parcel never arrived.",
        why_asked=["this run read an email from customer@example.com", "refunds over $25.00 need a person"],
        expires_at=NOW + 3 * 3600 + 5 * 60,
        created_at=NOW - 600,
        reviewers_required=1,
        decisions=[],
    )
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def render(v: ProposalView | None = None, reviewer: str = "alice@example.com", now: int = NOW) -> Page:
    return confirmation_page(v or view(), reviewer, "/approvals/appr-01HZX3", "T" * 43, QUERY, now)


class Elements(HTMLParser):
    """Every start tag with its attributes, as a browser's tokenizer would see them."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def named(self, tag: str) -> list[dict[str, str | None]]:
        return [attrs for name, attrs in self.tags if name == tag]


def assert_inert(html: str) -> None:
    tags = Elements(html)
    assert {name for name, _ in tags.tags} <= {
        "html", "head", "meta", "title", "style", "body", "main", "p", "strong", "em", "h1", "h2",
        "dl", "dt", "dd", "pre", "span", "blockquote", "ul", "li", "form", "input", "div", "button",
        "h3", "label", "textarea",
    }  # fmt: skip
    assert not any(key.startswith("on") for _, attrs in tags.tags for key in attrs)
    assert "<script" not in html.lower()
    assert "<img" not in html.lower()
    assert "<svg" not in html.lower()


def test_given_a_proposal_when_rendered_then_summary_details_and_context_are_shown() -> None:
    page = render()
    assert page.status == 200
    assert "<h1>Refund $42.00 to customer@example.com for order #1001</h1>" in page.body
    assert "<pre>Hi,\n\nYour refund of $42.00 is on its way.\n\nThanks</pre>" in page.body
    assert "this run read an email from customer@example.com" in page.body
    assert "refunds over $25.00 need a person" in page.body
    assert "The assistant&#x27;s reason (unverified — written by the AI, not checked):" in page.body
    assert UNVERIFIED_LABEL.startswith("The assistant's reason (unverified")
    assert "Nothing has happened yet" in page.body
    assert "Opening this link changed nothing" in page.body
    assert "2023-11-15 01:18 UTC (in 3 hours 5 minutes)" in page.body
    assert "Deciding as <strong>alice@example.com</strong>" in page.body


def test_given_a_proposal_then_form_posts_link_fields_token_and_two_equal_buttons() -> None:
    tags = Elements(render().body)
    (form,) = tags.named("form")
    assert form == {"method": "post", "action": "/approvals/appr-01HZX3"}
    hidden = {attrs["name"]: attrs["value"] for attrs in tags.named("input") if attrs["type"] == "hidden"}
    assert hidden == {
        "r": "alice@example.com",
        "e": "1700086400",
        "n": "n0nce",
        "d": "a" * 64,
        "s": "S" * 43,
        "form_token": "T" * 43,
        "seen": "",  # the version the page showed (its fingerprint; "" in this hand-made view)
    }
    buttons = tags.named("button")
    assert sorted((b["name"], b["value"]) for b in buttons) == [
        ("decision", "approve"),
        ("decision", "reject"),
    ]
    assert all(b["type"] == "submit" for b in buttons)
    assert not any("autofocus" in attrs for _, attrs in tags.tags)
    assert_inert(render().body)


def test_given_phone_viewport_then_page_is_mobile_ready_and_script_free() -> None:
    body = render().body
    assert '<meta name=viewport content="width=device-width, initial-scale=1">' in body
    assert "<style>" in body
    assert "<script" not in body
    assert "http://" not in body and "https://" not in body  # nothing loaded from elsewhere


@pytest.mark.parametrize("hostile", HOSTILE)
def test_given_hostile_text_in_every_field_when_rendered_then_it_is_inert_text(hostile: str) -> None:
    v = view(
        approval_id=hostile,
        task=hostile,
        tool=hostile,
        summary=hostile,
        details=[(hostile, hostile), ("Email body", f"Dear team,\n{hostile}\n")],
        unverified_reason=hostile,
        why_asked=[hostile],
        decisions=[Decided(hostile, hostile, NOW - 5, hostile)],
        reviewers_required=2,
    )
    page = confirmation_page(v, hostile, hostile, hostile, f"r={hostile}&s={hostile}", NOW)
    assert_inert(page.body)
    assert hostile not in page.body or hostile.startswith("@")  # markup is escaped; a mention is plain text
    assert "@everyone @here" in render(view(unverified_reason="@everyone @here")).body  # shown, never a ping
    outcome = outcome_page(hostile, hostile, status=400)
    assert_inert(outcome.body)


def test_given_two_reviewer_tool_with_one_approval_then_progress_and_who_decided() -> None:
    v = view(reviewers_required=2, decisions=[Decided("bob", "approve", NOW - 60)])
    body = render(v).body
    assert "1 of 2 approvals" in body
    assert "bob: <strong>approve</strong> at 2023-11-14 22:12 UTC" in body
    assert "<form" in body


def test_given_reviewer_already_decided_then_no_form_only_their_decision() -> None:
    v = view(decisions=[Decided("alice@example.com", "reject", NOW - 60)])
    body = render(v).body
    assert "You already decided: <strong>reject</strong>" in body
    assert "<form" not in body


def test_given_expired_proposal_then_no_form() -> None:
    body = render(now=view().expires_at + 1).body
    assert "already expired" in body
    assert "<form" not in body


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (7200, "in 2 hours"),
        (3660, "in 1 hour 1 minute"),
        (300, "in 5 minutes"),
        (59, "in less than a minute"),
    ],
)
def test_given_time_left_then_relative_expiry_reads_naturally(seconds: int, text: str) -> None:
    assert f"({text})" in render(view(expires_at=NOW + seconds)).body


def test_given_absurd_stored_expiry_then_page_still_renders() -> None:
    assert "epoch seconds" in render(view(expires_at=10**20)).body


def test_given_outcome_then_page_has_status_headers_and_fixed_wording() -> None:
    page = outcome_page("This link is not valid", "Ask for a new link.", status=403)
    assert page.status == 403
    assert "<h1>This link is not valid</h1>" in page.body
    assert page.headers == EXPECTED_HEADERS


def test_given_any_page_then_security_headers_and_apigw_shape() -> None:
    for page in (render(), outcome_page("Approved — the refund will run once", "Done.", status=200)):
        assert page.headers == EXPECTED_HEADERS
        response = page.to_apigw()
        assert response == {
            "statusCode": page.status,
            "headers": EXPECTED_HEADERS,
            "body": page.body,
            "isBase64Encoded": False,
        }
        response["headers"]["x-frame-options"] = "ALLOW"
        assert page.headers["x-frame-options"] == "DENY"  # the response is a copy
    assert render().headers is not outcome_page("a", "b", status=200).headers


# --- parse_form ---------------------------------------------------------------------------------


def test_given_a_posted_form_then_fields_decoded_and_last_value_wins() -> None:
    body = urlencode([("r", "alice@example.com"), ("decision", "reject"), ("decision", "approve"), ("x", "")])
    assert parse_form(body.encode(), FORM) == {"r": "alice@example.com", "decision": "approve", "x": ""}
    assert (
        parse_form(body.encode(), "Application/X-WWW-Form-Urlencoded; charset=UTF-8")["decision"] == "approve"
    )


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b"decision=approve", "application/json"),
        (b"decision=approve", "multipart/form-data; boundary=x"),
        (b"decision=approve", ""),
        (b"decision=approve", "application/x-www-form-urlencoded; charset=latin-1"),
        (b"decision=approve&pad=" + b"x" * MAX_FORM_BYTES, FORM),
        (b"decision=%ff", FORM),
        (b"\xff\xfe", FORM),
        ("&".join(f"k{i}=v" for i in range(100)).encode(), FORM),
    ],
)
def test_given_wrong_type_oversized_or_undecodable_form_then_empty(body: bytes, content_type: str) -> None:
    assert parse_form(body, content_type) == {}


def test_given_form_at_the_size_cap_then_parsed() -> None:
    body = b"decision=approve&pad=" + b"x" * (MAX_FORM_BYTES - len(b"decision=approve&pad="))
    assert len(body) == MAX_FORM_BYTES
    assert parse_form(body, FORM)["decision"] == "approve"


@FAST
@given(
    body=st.one_of(st.binary(max_size=300), st.text(max_size=100).map(str.encode)),
    content_type=st.one_of(st.just(FORM), st.text(max_size=60)),
)
def test_property_parse_form_never_raises_and_returns_strings(body: bytes, content_type: str) -> None:
    fields = parse_form(body, content_type)
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in fields.items())


@FAST
@given(
    body=st.one_of(st.none(), st.integers(), st.text(max_size=20)),
    content_type=st.one_of(st.none(), st.just(FORM)),
)
def test_property_parse_form_with_wrong_types_returns_empty(body: object, content_type: object) -> None:
    assert parse_form(body, content_type) == {}  # type: ignore[arg-type]


def test_rendered_pages_contain_no_unescaped_angle_brackets_from_data() -> None:
    body = render(view(summary="a<b>c", details=[("x", "1 < 2 > 0")])).body
    assert "a&lt;b&gt;c" in body
    assert re.search(r"1 &lt; 2 &gt; 0", body)


def test_given_no_details_no_reasons_then_page_says_so_plainly() -> None:
    body = render(view(details=[], why_asked=[], unverified_reason="")).body
    assert "(no details)" in body
    assert "(no reason recorded)" in body
    assert "(no reason given)" in body
