"""Slack's interaction requests, fuzzed through the deployed handler (POST /approvals/slack).

Properly signed clicks and edit-modal submissions with any field dropped or given a value of the
wrong type, malformed JSON, any body under any content type, and bad signatures. Slack's protocol
wants 200 for a request it signed (the answer is in the body or sent to the response URL), so the
property is: a 200, 400, 401 or 413 JSON answer, never a 5xx or a traceback; and no decision,
version or inbox event unless a well-formed click or submission of an allowed reviewer made it.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import example
from hypothesis import strategies as st

from lockgate.approvals.refusals import RefusalLog, Why
from lockgate.approvals.slack import CANNOT_DECIDE
from lockgate.approvals.slack_modal import edit_view
from lockgate.approvals.slack_payload import MAX_BODY_BYTES
from lockgate.approvals.versions import MAX_EDITED_CHARS
from lockgate.clock import SystemClock
from lockgate.telemetry import CountingMetrics
from lockgate_infra.local.slack_modals import submission_payload
from lockgate_infra.local.slack_stub import LOCAL_TEAM, click_payload
from tests.fuzz.callback import ALICE, BOB, CAROL, FORM, Callback, signed, slack_form
from tests.fuzz.strategies import content_types, fuzzed, hostile_text, number_texts
from tests.fuzz.test_review_page_inputs import accepted_amount
from tests.support import LOG

ANSWERS = (200, 400, 401, 413)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | hostile_text(20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(hostile_text(10), inner, max_size=3),
    max_leaves=8,
)
Path = tuple[str | int, ...]
Change = tuple[Path, str, Any]  # where, drop or replace, with what
# Where the parsers look: each field of a click and of a submission that Lockgate reads, and the
# objects holding them (a change to what Slack sends and Lockgate ignores would prove nothing).
_ACTOR: tuple[Path, ...] = ((), ("type",), ("user",), ("user", "id"), ("user", "team_id"), ("team",),
                            ("team", "id"), ("enterprise",), ("enterprise", "id"))  # fmt: skip
CLICK_PATHS = (*_ACTOR, ("actions",), ("actions", 0), ("actions", 0, "type"), ("actions", 0, "action_id"),
               ("actions", 0, "value"), ("response_url",), ("trigger_id",))  # fmt: skip
_FIELD = ("view", "state", "values", "field:amount")
SUBMISSION_PATHS = (*_ACTOR, ("view",), ("view", "callback_id"), ("view", "private_metadata"),
                    ("view", "state"), ("view", "state", "values"), _FIELD, (*_FIELD, "value"),
                    (*_FIELD, "value", "type"), (*_FIELD, "value", "value"))  # fmt: skip


def changed(document: Any, changes: list[Change]) -> Any:
    """``document`` (a copy) with each change made where its path still leads."""
    document = json.loads(json.dumps(document))
    for path, how, value in changes:
        if not path:
            document = value
            continue
        parent = document
        for step in path[:-1]:
            inside = isinstance(parent, dict) and step in parent
            parent = (
                parent[step] if inside or (isinstance(parent, list) and step in range(len(parent))) else None
            )
        last = path[-1]
        if isinstance(parent, dict) and how == "drop":
            parent.pop(last, None)
        elif isinstance(parent, dict) or (isinstance(parent, list) and last in range(len(parent))):
            parent[last] = value  # type: ignore[index]
    return document


def changes_to(paths: tuple[Path, ...]) -> st.SearchStrategy[list[Change]]:
    """One to three changes where a parser looks: a field dropped, or given any JSON (or JSON text)."""
    value = st.one_of(JSON, JSON.map(json.dumps))
    return st.lists(
        st.tuples(st.sampled_from(paths), st.sampled_from(("drop", "replace")), value), min_size=1, max_size=3
    )


def assert_slack_answer(answer: dict[str, Any]) -> None:
    """What Slack may be told: a status it understands, and a body that is empty or JSON."""
    assert answer["statusCode"] in ANSWERS, answer
    assert answer["body"] == "" or isinstance(json.loads(answer["body"]), dict), answer


# -- clicks ---------------------------------------------------------------------------------


def _click_decides_only_when_well_formed(
    callback: Callback, changes: list[Change], user: str, action: str
) -> None:
    # Given a pending refund and a click on its message's button, signed by Slack, with some of its
    # fields dropped or given values of any JSON type
    proposal = callback.propose()
    value = f"{proposal.approval_id}|{proposal.fingerprint}"
    click = click_payload(user, action, value, callback.slack.response_url(f"fuzz-{proposal.approval_id}"))
    payload = changed(click, changes)
    # When Slack posts it
    answer = callback.slack_post(slack_form(payload))
    # Then Slack gets an answer it understands, and a decision is written only for a well-formed
    # click of an allowed reviewer's Approve or Reject on that very request
    assert_slack_answer(answer)
    written = callback.written(proposal)
    if written:
        assert isinstance(payload, dict) and payload.get("type") == "block_actions"
        assert payload["user"]["id"] in (ALICE, BOB) and payload["team"]["id"] == LOCAL_TEAM
        assert [(a["action_id"], a["value"]) for a in payload["actions"]] in (
            [("lockgate_approve", value)],
            [("lockgate_reject", value)],
        )


test_given_any_signed_click_then_a_slack_answer_and_a_decision_only_from_a_well_formed_one = fuzzed(
    changes=changes_to(CLICK_PATHS),
    user=st.sampled_from((ALICE, CAROL, "U0STRANGER", "")),
    action=st.sampled_from(("lockgate_approve", "lockgate_reject", "lockgate_edit", "lockgate_other")),
)(_click_decides_only_when_well_formed)


# -- the edit modal's submission ---------------------------------------------------------------


def _submission(callback: Callback, typed: str, changes: list[Change] | None = None) -> tuple[Any, Any]:
    """A pending refund, and alice's submission of its edit modal with the amount as typed."""
    proposal = callback.propose()
    opened = {"id": "V0FUZZ", "view": edit_view(proposal, proposal.args, proposal.fingerprint)}
    payload = submission_payload(opened, ALICE, {"amount": typed}, team=LOCAL_TEAM)
    return proposal, changed(payload, changes) if changes else payload


@example(typed="1e309")
@example(typed="9" * 41)
@example(typed="৪0.00")
@example(typed="１２")
def _submitted_amount_is_stored_exactly_or_shown_under_its_field(callback: Callback, typed: str) -> None:
    # Given alice's edit modal for a pending $80.00 refund, submitted with the amount as typed
    proposal, payload = _submission(callback, typed)
    body = slack_form(payload)
    # When Slack posts the submission
    answer = callback.slack_post(body)
    # Then a plain amount in range closes the modal and is stored exactly; anything else is shown
    # under the field (or, longer than the modal allows, refused), and nothing is written
    assert_slack_answer(answer)
    stored = accepted_amount(typed)
    if len(body) > MAX_BODY_BYTES:
        assert answer["statusCode"] == 413
    elif len(typed) > MAX_EDITED_CHARS:
        assert answer["statusCode"] == 400
    elif stored is None:
        assert answer["statusCode"] == 200 and json.loads(answer["body"])["response_action"] == "errors"
    else:
        assert (answer["statusCode"], answer["body"]) == (200, "")
        assert callback.version_args(proposal)["amount"] == stored
        return
    assert callback.written(proposal) == []


test_given_any_amount_in_the_edit_modal_then_a_plain_one_is_stored_exactly_and_others_shown_refused = fuzzed(
    typed=number_texts()
)(_submitted_amount_is_stored_exactly_or_shown_under_its_field)


def _malformed_submission_is_answered(callback: Callback, changes: list[Change]) -> None:
    # Given alice's submission of a valid edit, signed, with fields dropped or of any JSON type
    proposal, payload = _submission(callback, "40.00", changes)
    # When Slack posts it
    answer = callback.slack_post(slack_form(payload))
    # Then Slack gets an answer it understands; only a submission still well-formed records the edit
    assert_slack_answer(answer)
    if callback.written(proposal):
        assert callback.version_args(proposal)["amount"] == "40.00"
        assert payload["user"]["id"] == ALICE and payload["view"]["callback_id"] == "lockgate_edit"


test_given_any_malformed_signed_submission_then_a_slack_answer_and_nothing_else_is_recorded = fuzzed(
    changes=changes_to(SUBMISSION_PATHS)
)(_malformed_submission_is_answered)


# -- bodies and signatures -------------------------------------------------------------------


def _any_body_is_refused(callback: Callback, body: bytes, content_type: str, signature: str) -> None:
    # Given any body (any bytes, or one payload field of malformed JSON) under any content type,
    # signed by Slack, signed with another secret, or not signed
    callback.waiting()  # a request it could name
    headers = {**signed(body), "content-type": content_type}
    if signature == "forged":
        headers["x-slack-signature"] = "v0=" + "0" * 64
    elif signature == "none":
        headers = {"content-type": content_type}
    # When it is posted to Slack's route
    answer = callback.slack_post(body, headers)
    # Then Slack gets an answer it understands, and nothing is decided
    assert_slack_answer(answer)
    if signature != "signed":
        assert answer["statusCode"] in (401, 413)
    assert callback.decisions_anywhere() == []


test_given_any_body_or_signature_then_a_slack_answer_and_nothing_decided = fuzzed(
    body=st.one_of(
        st.binary(max_size=400),
        hostile_text().map(slack_form),  # the payload field, not JSON
        JSON.map(slack_form),
        st.sampled_from((b"payload=%7B", b"payload=%ff", b"payload=1&payload=2", b"", b"a=b&c")),
    ),
    content_type=st.one_of(st.just(FORM), content_types()),
    signature=st.sampled_from(("signed", "signed", "forged", "none")),
)(_any_body_is_refused)


def test_given_a_signed_submission_whose_state_values_are_not_an_object_then_400_and_nothing_decided(
    callback: Callback,
) -> None:
    # Given alice's edit submission, signed by Slack, whose view.state.values is a list, a string,
    # a number or null rather than an object (this answered 500: AttributeError on .items())
    values: Any
    for values in ([], "values", 5, None):
        proposal, payload = _submission(callback, "40.00")
        payload["view"]["state"]["values"] = values
        # When Slack posts it
        answer = callback.slack_post(slack_form(payload))
        # Then it is refused as not one of our requests, and nothing is decided
        assert (answer["statusCode"], answer["body"]) == (400, '{"error":"request refused"}')
        assert callback.written(proposal) == []


def test_given_a_signed_submission_naming_an_empty_approval_id_then_it_cannot_decide_and_is_kept(
    callback: Callback,
) -> None:
    # Given alice's edit submission, signed by Slack, whose modal names no approval id
    proposal, payload = _submission(callback, "40.00")
    payload["view"]["private_metadata"] = json.dumps({"approval_id": "", "seen": proposal.fingerprint})
    # When Slack posts it
    answer = callback.slack_post(slack_form(payload))
    # Then the modal says she cannot decide it (it said "could not record that just now, try again",
    # from DynamoDB refusing an empty key), and the refusal is kept as an unknown request
    assert answer["statusCode"] == 200 and CANNOT_DECIDE in answer["body"]
    assert callback.written(proposal) == []
    (refusal,) = RefusalLog(
        callback.db, callback.aws.names["DecisionsTable"], SystemClock(), LOG, CountingMetrics()
    ).for_approval("")
    assert (refusal.channel, refusal.who, refusal.why) == (
        "slack",
        f"{LOCAL_TEAM}/{ALICE}",
        Why.UNKNOWN_REQUEST,
    )
