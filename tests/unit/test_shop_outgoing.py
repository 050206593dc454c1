"""Outgoing mail the attacker cannot write, table-style: links inside links, the shop's pages, and
the content rule (phone numbers, requests for card numbers, passwords and codes) that makes a reply
written after reading an email wait for a person."""

from __future__ import annotations

import pytest

from lockgate import DecisionNotice
from lockgate.actions.facts import RunFacts
from lockgate.actions.guard import Check, NeedsPerson, RunState, policy_refusal, rule_on
from shop.arguments import SendEmailArgs
from shop.notices import TEXTS, tell_customer
from shop.outgoing import phone_numbers, reply_content, secret_requests
from shop.policies import SHOP_PATHS, links_only_to_shop, path_allowed
from shop.replies import send_email_tool

HOST, SHOP_ADDRESS, ADA = "shop.example.com", "support@shop.example.com", "ada@example.com"
FACTS = RunFacts(values={"customer_email": ADA})
SHOP_PHONE = "+1 415 555 0100"


def email(body: str, subject: str = "Your order") -> SendEmailArgs:
    return SendEmailArgs(to=ADA, subject=subject, body=body)


def link_verdict(body: str) -> bool:
    verdict = links_only_to_shop(HOST, SHOP_ADDRESS, SHOP_PATHS)(email(body), FACTS)
    if not verdict.allowed:  # the model is told which pages it may link to
        assert "https://shop.example.com" in verdict.reason and "/help" in verdict.reason
    return verdict.allowed


# ------------------------------------------------------------------ links inside links, the shop's pages

ALLOWED_LINKS = [
    "Track it at https://shop.example.com/track/A-1042.",
    "https://shop.example.com/track?order=A-1042&ref=email",  # a query with no link in it
    "https://shop.example.com/help/returns-and-refunds#refund-reviews",
    "https://shop.example.com/help/?next=https://shop.example.com/track/A-1042",  # our own page inside
    "https://shop.example.com/",
    "https://shop.example.com",
    "Visit shop.example.com any time.",
    "shop.example.com/help/shipping",  # a bare domain with an allowed path
    "https://shop.example.com/account/orders, or https://shop.example.com/gift-cards.",
    "https://shop.example.com/help/payment%20methods",  # encoded, still below /help
]
DENIED_LINKS = [
    # the link of the issue: our host, a foreign link in its query
    "https://shop.example.com/logout?next=https://evil.example/login",
    "https://shop.example.com/help?next=https%3A%2F%2Fevil.example%2Flogin",  # encoded
    "https://shop.example.com/help?next=https%253A%252F%252Fevil.example",  # encoded twice
    "https://shop.example.com/help?next=//evil.example/login",  # protocol-relative
    "https://shop.example.com/help?next=%2F%2Fevil.example",
    "https://shop.example.com/help?u=evil.example",  # a bare domain in the query
    "https://shop.example.com/help?to=grace@example.com",  # another customer's address inside
    "https://shop.example.com/help?to=grace%40example.com",
    "https://shop.example.com/help#https://evil.example/login",  # in the fragment
    "https://shop.example.com/help#%68ttps%3A%2F%2Fevil.example",  # fragment, encoded letters too
    "https://shop.example.com/track?u=https://shop.example.com/x?v=https://evil.example",  # nested twice
    "https://shop.example.com/help?next=https://shop.example.com.evil.example/",  # look-alike inside
    "https://shop.example.com/help?x=93.184.216.34",  # an IP address inside
    "https://shop.example.com/help?x=javascript:alert(1)",
    # paths the shop does not link to
    "https://shop.example.com/logout",
    "https://shop.example.com/account/delete",
    "https://shop.example.com/admin",
    "shop.example.com/logout",  # a bare domain's path counts
    "https://shop.example.com/helpdesk",  # /help's prefix is not below /help
    "https://shop.example.com/help/../logout",  # climbing out
    "https://shop.example.com/help/%2e%2e/logout",
    "https://shop.example.com/help/%252e%252e/logout",
    "https://shop.example.com//evil.example/",  # an empty segment
    "https://shop.example.com/help%2F%2Fevil.example",
    "https://shop.example.com/help%3Fnext=https://evil.example",  # an encoded '?'
    "https://shop.example.com/help;jsessionid=1",
]


@pytest.mark.parametrize("body", ALLOWED_LINKS)
def test_given_links_to_the_shops_pages_when_checked_then_the_email_is_allowed(body: str) -> None:
    assert link_verdict(body)


@pytest.mark.parametrize("body", DENIED_LINKS)
def test_given_a_link_inside_a_link_or_another_page_when_checked_then_the_email_is_refused(body: str) -> None:
    assert not link_verdict(body)


@pytest.mark.parametrize(
    ("path", "allowed"),
    [("", True), ("/", True), ("/help", True), ("/help/", True), ("/help/tracking", True),
     ("/track/A-1042", True), ("/returns", True), ("/x", False), ("/HELP", False), ("/help/..", False),
     ("/help/./x", False), ("/help\\x", False)],
)  # fmt: skip
def test_given_a_path_then_only_the_shops_pages_and_below_are_allowed(path: str, allowed: bool) -> None:
    assert path_allowed(path, SHOP_PATHS) is allowed


# ------------------------------------------------------------------ what a reply may say


@pytest.mark.parametrize(
    "text",
    [
        "Call us now on +1 (555) 010-9999.",
        "call 555-010-9999",
        "ring 555.010.9999 today",
        "(555) 010 9999",
        "+44 20 7946 0958",
        "0044 20 7946 0958",
        "020 7946 0958",
        "+49 30 901820",
        "text 4155550199",
        "WhatsApp +33\u20106\u201012\u201034\u201056\u201078",  # Unicode hyphens
    ],
)
def test_given_a_phone_number_in_any_format_then_it_is_found(text: str) -> None:
    assert list(phone_numbers(text))


@pytest.mark.parametrize(
    "text",
    [
        "Your order A-1042 ($49.00) shipped on 2026-12-01 and arrives in 3-5 days.",
        "Refunded $1,049.00 on 12/01/2026.",
        "Track it at https://shop.example.com/track/A-1042?ref=20261201123456",  # digits inside a link
        "Orders A-1042, A-1043 and A-2001.",
        "We ship within 2 days, 7 days a week.",
    ],
)
def test_given_amounts_dates_order_numbers_and_links_then_no_phone_number_is_found(text: str) -> None:
    assert list(phone_numbers(text)) == []


@pytest.mark.parametrize(
    "text",
    [
        "To confirm, read us your card number.",
        "Please send your full credit card number and CVV.",
        "Reply with your password to keep your account.",
        "What is your password?",
        "Tell us the one-time code we texted you.",
        "Please share the 6-digit code.",
        "Reply with the code we sent you.",
        "Enter your PIN at the link.",
        "Forward us the verification code.",
        "We need your bank account number to refund you.",
        "Confirm your security code (the 3 digits on the back).",
    ],
)
def test_given_a_request_for_a_card_number_password_or_code_then_it_is_found(text: str) -> None:
    assert list(secret_requests(text))


@pytest.mark.parametrize(
    "text",
    [
        "Your refund of $25.00 goes back to the card you paid with.",
        "You can reset your password at https://shop.example.com/account/orders.",
        "Your discount code SPRING is applied.",
        "We pin your order for 7 days.",
    ],
)
def test_given_an_ordinary_reply_then_no_request_for_a_secret_is_found(text: str) -> None:
    assert list(secret_requests(text)) == []


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ("Call us now on +1 (555) 010-9999 and read us your card number.", "phone number"),
        ("Call us now on +1 (555) 010-9999 and read us your card number.", "card number, password or code"),
        ("Reply with your password.", "card number, password or code"),
        ("Call +1 (555) 010-9999.", "'+1 (555) 010-9999'"),  # the reason names what it found
    ],
)
def test_given_a_hit_then_the_reply_needs_a_person_after_untrusted_content(body: str, why: str) -> None:
    verdict = reply_content((SHOP_PHONE,))(email(body), FACTS)
    assert verdict.allowed and verdict.needs_person and verdict.when_tainted
    assert why in verdict.reason


@pytest.mark.parametrize(
    "body",
    [
        "Your order A-1042 shipped; track it at https://shop.example.com/track/A-1042.",
        "Call our team on +1 415 555 0100.",  # the shop's own number
        "Call our team on (415) 555-0100.",  # without the country code
    ],
)
def test_given_no_hit_or_the_shops_own_number_then_the_reply_is_simply_allowed(body: str) -> None:
    verdict = reply_content((SHOP_PHONE,))(email(body), FACTS)
    assert verdict.allowed and not verdict.needs_person, verdict.reason


def test_given_a_hit_in_the_subject_then_it_counts_too() -> None:
    verdict = reply_content()(email("Hello", subject="Call +1 (555) 010-9999"), FACTS)
    assert verdict.needs_person


# ------------------------------------------------------------------ the guard, with the shop's send_email

SEND = send_email_tool(HOST, SHOP_ADDRESS)
INJECTED = {
    "to": ADA,
    "subject": "Security check",
    "body": "Call +1 (555) 010-9999, read us your card number.",
}


def test_given_an_injected_reply_after_reading_an_email_then_it_waits_for_a_person_with_the_reason() -> None:
    state = RunState(FACTS, taint_sources=["an email from ada@example.com"])
    ruling = rule_on([SEND], "send_email", INJECTED, state)
    assert isinstance(ruling, NeedsPerson) and ruling.check is Check.TAINT
    assert "phone number" in ruling.reason and "card number" in ruling.reason
    assert ruling.reasons[-1] == "this run read an email from ada@example.com"


def test_given_the_same_reply_in_a_run_that_read_nothing_untrusted_then_it_is_allowed() -> None:
    assert rule_on([SEND], "send_email", INJECTED, RunState(FACTS)).check is Check.CLEARED


def test_given_an_approved_injected_reply_when_rechecked_then_the_content_rule_does_not_refuse_it() -> None:
    assert policy_refusal(SEND, SEND.validate(INJECTED), FACTS) is None


def test_given_a_link_inside_a_link_then_the_guard_refuses_it_outright() -> None:
    body = "See https://shop.example.com/logout?next=https://evil.example/login"
    state = RunState(FACTS, taint_sources=["an email from ada@example.com"])
    ruling = rule_on([SEND], "send_email", {"to": ADA, "subject": "Hi", "body": body}, state)
    assert ruling.check is Check.POLICY and "remove" in ruling.reason


@pytest.mark.parametrize("outcome", ["done", "rejected", "expired"])
def test_given_a_decided_reply_then_the_customer_gets_no_notice_quoting_its_subject(outcome: str) -> None:
    summary = SEND.summary(SEND.validate(INJECTED))
    notice = DecisionNotice("ap-1", "run-1", "send_email", summary, outcome, "", FACTS)
    # No services: a notice that tried to send would fail here, not pass quietly.
    assert tell_customer(notice, {})["status"] == "not sent"


def test_given_a_rejection_no_run_could_hear_then_the_hook_has_words_for_it() -> None:
    # The run tells the customer of a rejection; the hook hears one only when the run could not
    # (lockgate.agent.resume), and then it must not fall back to "could not complete".
    assert "could not approve" in TEXTS["rejected"] and "{summary}" in TEXTS["rejected"]
