"""The review page's inputs, fuzzed through the deployed handler: no input answers 5xx or raises.

GET and POST /approvals/{id} as API Gateway calls the approval callback, on moto, with the worker's
edit check in process. Whatever a reviewer's browser (or anyone with a link) sends, the answer is a
page: 200 for a decision that was recorded, a 4xx page otherwise, and then nothing is written but
the refusal row kept on purpose (no decision, no version, no #state, no inbox event).
"""

from __future__ import annotations

from decimal import Decimal
from urllib.parse import quote, urlencode

from hypothesis import example
from hypothesis import strategies as st

from lockgate.approvals.pages import MAX_FORM_BYTES
from lockgate.config.rules import PLAIN_NUMBER
from tests.fuzz.callback import FORM, PROPOSED, SAME_ORIGIN, Callback, event
from tests.fuzz.strategies import KNOWN_NUMBERS, content_types, fuzzed, hostile_text, number_texts
from tests.refund_worker import MAX_AMOUNT

CENT = Decimal("0.01")


def accepted_amount(typed: str) -> str | None:
    """The amount an edit to ``typed`` stores, or None if it must be refused: plain ASCII digits with
    at most cents, more than 0 and at most the tool's $500, and not the proposed $80.00."""
    text = typed.strip()
    if not PLAIN_NUMBER.match(text):
        return None
    value = Decimal(text)
    if not 0 < value <= MAX_AMOUNT or value != value.quantize(CENT) or value == Decimal(PROPOSED):
        return None
    return f"{value:.2f}"


def assert_answered(answer: dict[str, object]) -> None:
    """A page, not an error: under 500, HTML, and no traceback in it."""
    assert isinstance(answer["statusCode"], int) and answer["statusCode"] < 500, answer
    body = str(answer["body"])
    assert body.startswith("<!doctype html>") and "Traceback" not in body


# -- Approve with changes: edit.amount as anything a person or a script could type --------------


def _edited_amount_is_stored_exactly_or_refused_with_nothing_written(callback: Callback, typed: str) -> None:
    # Given a pending $80.00 refund and alice's review page
    proposal = callback.propose()
    body = urlencode({**callback.form(proposal), "decision": "edit", "edit.amount": typed})
    # When she posts "Approve with changes" with the amount as typed
    answer = callback.post(proposal.approval_id, body)
    # Then the answer is a page, never an error
    assert_answered(answer)
    stored = accepted_amount(typed)
    if len(body) > MAX_FORM_BYTES:  # too big to be a form: not read, so not even the link is seen
        assert answer["statusCode"] == 403 and callback.written(proposal) == []
    elif stored is None:
        # And a value that is not a plain amount in range is refused, saying so, with nothing written
        assert answer["statusCode"] == 422 and "Nothing was recorded" in answer["body"], answer["body"]
        assert callback.written(proposal) == []
    else:
        # And a plain amount is stored as the version that runs, exactly as its decimals say
        assert answer["statusCode"] == 200, answer["body"]
        assert callback.version_args(proposal)["amount"] == stored
        assert {"#v1", "alice#v1", "#state"} <= set(callback.written(proposal))


test_given_any_edited_amount_then_a_plain_one_is_stored_exactly_and_any_other_refused = fuzzed(
    typed=number_texts()
)(_edited_amount_is_stored_exactly_or_refused_with_nothing_written)


def test_given_each_known_hostile_amount_then_it_is_refused_or_stored_exactly(callback: Callback) -> None:
    # Given every number that has broken an edit channel (1e309, 9×10^40, ৪0.00, １２, NaN, ...):
    # When each is posted as an edit, Then each is a page, and only a plain amount in range is stored
    for typed in KNOWN_NUMBERS:
        _edited_amount_is_stored_exactly_or_refused_with_nothing_written(callback, typed)


# -- the decision form's other fields -----------------------------------------------------------

_FIELDS = ("decision", "reason", "seen", "form_token", "r", "e", "n", "d", "s")


def _fuzzed_form_decides_only_as_its_real_fields_say(
    callback: Callback, changes: dict[str, str], decision: str, extra: dict[str, str]
) -> None:
    # Given alice's page for a pending refund, and its form with some fields replaced by anything
    proposal = callback.propose()
    real = callback.form(proposal)
    form = {**extra, **real, "decision": decision, **changes}
    # When it is posted
    answer = callback.post(proposal.approval_id, urlencode(form))
    assert_answered(answer)
    written = callback.written(proposal)
    signed_fields_intact = all(form.get(k) == real[k] for k in ("form_token", "r", "e", "n", "d", "s"))
    if answer["statusCode"] == 200:
        # Then only the real link and token, a real choice and the version shown (or none: a page from
        # before edits existed) can decide
        assert (
            signed_fields_intact
            and form["decision"] in ("approve", "reject")
            and form["seen"] in ("", real["seen"])
        )
        assert "alice" in written
    else:
        assert written == []
        if not signed_fields_intact:
            assert answer["statusCode"] == 403 and "This link cannot be used" in answer["body"]


test_given_any_decision_form_then_only_the_real_one_decides_and_the_rest_write_nothing = fuzzed(
    changes=st.dictionaries(st.sampled_from(_FIELDS), hostile_text(), max_size=3),
    decision=st.one_of(st.sampled_from(("approve", "reject", "edit", "Approve", " approve")), hostile_text()),
    extra=st.dictionaries(
        hostile_text(12).map(lambda k: f"edit.{k}") | hostile_text(12), hostile_text(), max_size=3
    ),
)(_fuzzed_form_decides_only_as_its_real_fields_say)


# -- the body itself: bytes, encodings, content types -------------------------------------------


def _mangle(form: str, how: str, data: bytes) -> bytes:
    raw = form.encode()
    if how == "prefix":
        return data + raw
    if how == "suffix":
        return raw + data
    if how == "truncate":
        return raw[: len(data) % (len(raw) + 1)]
    return data


@example(
    how="suffix", data=b"&edit.amount=%ff%fe", content_type="application/x-www-form-urlencoded", binary=False
)
@example(
    how="suffix", data=b"&edit.amount=\xff", content_type="application/x-www-form-urlencoded", binary=False
)
@example(how="suffix", data=b"&x=1" * 40, content_type="application/x-www-form-urlencoded", binary=False)
@example(how="prefix", data=b"", content_type="application/x-www-form-urlencoded", binary=True)
def _any_body_is_a_page_and_only_a_whole_form_decides(
    callback: Callback, how: str, data: bytes, content_type: str, binary: bool
) -> None:
    # Given alice's real form for a pending refund, as a body mangled (raw bytes, bad UTF-8, too many
    # fields, too big) and sent under any content type
    proposal = callback.propose()
    form = urlencode({**callback.form(proposal), "decision": "approve"})
    body = _mangle(form, how, data)
    headers = {**SAME_ORIGIN, "content-type": content_type}
    # When it is posted (bytes that are not UTF-8 arrive base64-encoded, as API Gateway sends them;
    # with ``binary``, every body does, as for a binary media type)
    answer = callback.post(proposal.approval_id, body, headers, binary=binary)
    # Then it is a page; a decision only from a body that still holds the whole form
    assert_answered(answer)
    if body == form.encode() and content_type == FORM:
        assert answer["statusCode"] == 200 and "alice" in callback.written(proposal)
    elif answer["statusCode"] != 200:
        assert callback.written(proposal) == []


test_given_any_body_and_content_type_then_a_page_and_nothing_written_unless_decided = fuzzed(
    how=st.sampled_from(("prefix", "suffix", "truncate", "replace")),
    data=st.one_of(st.binary(max_size=300), st.sampled_from((b"%", b"%e2%82", b"\xc3(", b"&&&==", b"\x00"))),
    content_type=content_types(),
    binary=st.booleans(),
)(_any_body_is_a_page_and_only_a_whole_form_decides)


def test_given_a_form_with_an_edited_amount_percent_encoded_as_bad_utf8_then_refused_and_nothing_written(
    callback: Callback,
) -> None:
    # Given alice's edit form whose amount is percent-encoded bytes that are not UTF-8
    proposal = callback.propose()
    body = urlencode({**callback.form(proposal), "decision": "edit"}) + "&edit.amount=" + quote(b"\xff4\xfe0")
    # When it is posted, Then the form is not read at all: a 403 page, nothing written
    answer = callback.post(proposal.approval_id, body)
    assert answer["statusCode"] == 403 and callback.written(proposal) == []


def test_given_a_body_flagged_base64_that_is_not_base64_then_400_and_nothing_written(
    callback: Callback,
) -> None:
    # Given alice's real form, in an event that says it is base64-encoded but is not (API Gateway never
    # sends one: it encodes bodies itself)
    proposal = callback.propose()
    request = event("POST", proposal.approval_id, callback.link(proposal), SAME_ORIGIN, "")
    request.update(body="decision=approve&not base64!", isBase64Encoded=True)
    # When it reaches the handler, Then a 400 page, and nothing is decided
    answer = callback.invoke(request)
    assert answer["statusCode"] == 400 and callback.written(proposal) == []
