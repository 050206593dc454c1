"""Signed links, tampered and garbled, through the deployed handler: the one neutral page, nothing written.

A reviewer's link (GET and POST /approvals/{id}), the digest link (GET /approvals) and the digest
page's re-send form (POST /approvals) are each taken from a real one and changed: a field replaced
by anything, dropped, lengthened, one character flipped, its digits written in another script,
padded with whitespace; the path id too, and the method. Every answer is a 4xx page; no decision,
version or inbox event is written, and no link is e-mailed.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from hypothesis import assume
from hypothesis import strategies as st
from moto.core.models import DEFAULT_ACCOUNT_ID
from moto.ses.models import ses_backends

from lockgate.approvals.pages import MAX_FORM_BYTES
from lockgate.approvals.reissue import ReissueAudit
from tests.fuzz.callback import SAME_ORIGIN, Callback, event
from tests.fuzz.strategies import DIGITS, fuzzed, hostile_text, number_texts

LINK = ("r", "e", "n", "d", "s")
OPERATIONS = ("replace", "drop", "append", "flip", "digits", "pad", "upper")
Tamper = tuple[str, str, str]  # operation, field, what with


def tampered(real: dict[str, str], changes: list[Tamper]) -> dict[str, str]:
    """``real`` with each change applied in turn."""
    query = dict(real)
    for operation, field, text in changes:
        value = query.get(field, "")
        if operation == "replace":
            query[field] = text
        elif operation == "drop":
            query.pop(field, None)
        elif operation == "append":
            query[field] = value + (text or "x")
        elif operation == "flip" and value:
            at = len(text) % len(value)
            query[field] = value[:at] + ("B" if value[at] == "A" else "A") + value[at + 1 :]
        elif operation == "digits":  # the same number in another script's digits: reads alike, is not
            script = DIGITS[sorted(DIGITS)[len(text) % len(DIGITS)]]
            query[field] = value.translate(str.maketrans("0123456789", script))
        elif operation == "pad":
            query[field] = f"{text[:1] or ' '}{value}\n"
        else:
            query[field] = value.swapcase()
    return query


changes_to_a_link = st.lists(
    st.tuples(st.sampled_from(OPERATIONS), st.sampled_from((*LINK, "form_token")), hostile_text(20)),
    min_size=1,
    max_size=3,
)


def assert_refused_page(answer: dict[str, Any]) -> None:
    assert 400 <= answer["statusCode"] < 500, answer
    assert str(answer["body"]).startswith("<!doctype html>") and "Traceback" not in answer["body"]


def mailed() -> int:
    """Links e-mailed through moto's SES so far."""
    return len(ses_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].sent_messages)


# -- a reviewer's link -----------------------------------------------------------------------


def _tampered_link_is_refused_everywhere(
    callback: Callback, changes: list[Tamper], path: str | None, method: str
) -> None:
    # Given alice's real link and page for a pending refund, changed
    proposal = callback.propose()
    real = callback.form(proposal)
    form = tampered({**real, "decision": "approve"}, changes)
    approval_id = proposal.approval_id if path is None else path
    assume(form != {**real, "decision": "approve"} or approval_id != proposal.approval_id)
    link = {k: v for k, v in form.items() if k in LINK}
    # When the changed link is opened, and its form posted (by any method)
    shown = callback.get(approval_id, link)
    posted = callback.post(approval_id, urlencode(form), query=link)
    other = callback.invoke(event(method, approval_id, link, SAME_ORIGIN, urlencode(form)))
    # Then each is a 4xx page (403: the one page every failed check shows), and nothing is written
    link_changed = link != {k: real[k] for k in LINK} or approval_id != proposal.approval_id
    for answer in (posted, other, *([shown] if link_changed else [])):
        assert_refused_page(answer)
    if approval_id:
        assert posted["statusCode"] == 403 and (shown["statusCode"] == 403 or not link_changed)
    assert callback.written(proposal) == [] and callback.decisions_anywhere() == []


test_given_a_tampered_link_when_opened_or_posted_then_refused_and_nothing_written = fuzzed(
    changes=changes_to_a_link,
    path=st.one_of(st.none(), hostile_text(), number_texts()),
    method=st.sampled_from(("PUT", "DELETE", "HEAD", "PATCH", "OPTIONS", "get", "", "POST ")),
)(_tampered_link_is_refused_everywhere)


# -- the digest link and its re-send form --------------------------------------------------


def _tampered_digest_is_refused_and_sends_nothing(callback: Callback, changes: list[Tamper]) -> None:
    # Given alice's real digest page (one refund waiting) and its re-send form, changed
    proposal = callback.waiting()
    real = {**callback.digest_form(), "approval": proposal.approval_id}
    form = tampered(real, changes)
    assume(form != real)
    link = {k: v for k, v in form.items() if k in LINK}
    before = mailed()
    # When the changed digest link is opened, and the changed form asks for the refund's link
    shown = callback.get("", link)
    resent = callback.post("", urlencode(form))
    # Then the digest page is shown for the real link only, and the changed form sends nothing
    if link != {k: real[k] for k in LINK}:
        assert_refused_page(shown)
    assert_refused_page(resent)
    assert mailed() == before and ReissueAudit(callback.db, callback.aws.state_table).entries() == []
    assert callback.decisions_anywhere() == []


test_given_a_tampered_digest_link_or_form_then_refused_and_no_link_is_sent = fuzzed(
    changes=st.lists(
        st.tuples(st.sampled_from(OPERATIONS), st.sampled_from((*LINK, "form_token")), hostile_text(20)),
        min_size=1,
        max_size=3,
    )
)(_tampered_digest_is_refused_and_sends_nothing)


def _resend_of_any_id_sends_only_a_waiting_one(callback: Callback, approval: str) -> None:
    # Given alice's real re-send form, asking for any approval id at all
    proposal = callback.waiting()
    form = {**callback.digest_form(), "approval": approval}
    before = mailed()
    # When it is posted
    body = urlencode(form)
    answer = callback.post("", body)
    # Then a page: a link is e-mailed only for the refund waiting for her; nothing is decided
    assert answer["statusCode"] < 500 and "Traceback" not in answer["body"]
    if len(body) > MAX_FORM_BYTES:  # too big to be read as a form: the one neutral page
        assert answer["statusCode"] == 403 and mailed() == before
    elif approval[:128] != proposal.approval_id:
        assert answer["statusCode"] in (409, 429) and mailed() == before
    assert callback.decisions_anywhere() == []


test_given_a_resend_form_naming_any_id_then_only_a_waiting_request_is_sent = fuzzed(
    approval=st.one_of(hostile_text(), number_texts(), st.sampled_from(("-", "ap_" + "0" * 24, "ap_%00")))
)(_resend_of_any_id_sends_only_a_waiting_one)
