"""The Slack edit modal: built from the stored proposal, and its submission parsed strictly."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qsl, urlencode

import pytest

from lockgate.actions.tools import fingerprint
from lockgate.approvals.proposals import Proposal
from lockgate.approvals.slack_modal import (
    CALLBACK_ID,
    FIELD_BLOCK,
    edit_view,
    field_errors,
    parse_submission,
)

FORM = "application/x-www-form-urlencoded"
ARGS = {"order_id": "A-2001", "amount": "80.00"}
PROPOSAL = Proposal(
    approval_id="ap_" + "1" * 24,
    task="helpdesk",
    run_id="run#1",
    tool="refund_order",
    args=ARGS,
    fingerprint=fingerprint(ARGS),
    summary="refund $80.00 on order A-2001 <!channel>",
    unverified_reason="",
    why=(),
    created_at=0,
    expires_at=3600,
    run_within_seconds=3600,
    extra={"editable": {"amount": {"type": "number", "exclusiveMinimum": 0, "description": "dollars"}}},
)


def submission(shown: dict[str, Any], values: dict[str, str], **overrides: Any) -> bytes:
    """What Slack posts when the modal is submitted with ``values`` typed in its fields."""
    payload = {
        "type": "view_submission",
        "user": {"id": "U0ALICE01"},
        "team": {"id": "T0SHOP001"},
        "view": {
            "callback_id": shown["callback_id"],
            "private_metadata": shown["private_metadata"],
            "state": {
                "values": {
                    f"{FIELD_BLOCK}{k}": {"value": {"type": "plain_text_input", "value": v}}
                    for k, v in values.items()
                }
            },
        },
        **overrides,
    }
    return urlencode({"payload": json.dumps(payload)}).encode()


def test_the_modal_offers_only_the_editable_fields_prefilled_and_carries_the_version_it_shows() -> None:
    view = edit_view(PROPOSAL, ARGS, "f" * 64)
    inputs = [b for b in view["blocks"] if b["type"] == "input"]
    assert [b["block_id"] for b in inputs] == ["field:amount"]
    assert inputs[0]["element"]["initial_value"] == "80.00" and "more than 0" in inputs[0]["hint"]["text"]
    assert json.loads(view["private_metadata"]) == {"approval_id": PROPOSAL.approval_id, "seen": "f" * 64}
    assert view["callback_id"] == CALLBACK_ID and "&lt;!channel&gt;" in view["blocks"][0]["text"]["text"]


def test_a_submission_of_our_modal_is_parsed_into_who_which_and_what_changed() -> None:
    view = edit_view(PROPOSAL, ARGS, "f" * 64)
    edit = parse_submission(submission(view, {"amount": "40.00"}), FORM)
    assert edit is not None
    assert (edit.user, edit.team_id, edit.approval_id, edit.seen, edit.changes) == (
        "U0ALICE01",
        "T0SHOP001",
        PROPOSAL.approval_id,
        "f" * 64,
        {"amount": "40.00"},
    )


@pytest.mark.parametrize(
    "tamper",
    [
        {"type": "block_actions"},
        {"view": {"callback_id": "someone_else", "private_metadata": "{}", "state": {}}},
        {"view": {"callback_id": CALLBACK_ID, "private_metadata": "not json", "state": {}}},
        {"view": {"callback_id": CALLBACK_ID, "private_metadata": '{"approval_id": 1}', "state": {}}},
        {"user": {"id": "not a slack user"}},
    ],
)
def test_anything_but_a_submission_of_our_modal_is_refused(tamper: dict[str, Any]) -> None:
    view = edit_view(PROPOSAL, ARGS, "f" * 64)
    assert parse_submission(submission(view, {"amount": "40"}, **tamper), FORM) is None


def test_a_foreign_block_an_oversized_body_or_another_content_type_is_refused() -> None:
    view = edit_view(PROPOSAL, ARGS, "f" * 64)
    body = submission(view, {"amount": "40"})
    assert parse_submission(body, "application/json") is None
    assert parse_submission(body + b"&extra=1", FORM) is None
    sneaky = json.loads(dict(parse_qsl(body.decode()))["payload"])
    sneaky["view"]["state"]["values"]["other"] = {"value": {"type": "plain_text_input", "value": "x"}}
    assert parse_submission(urlencode({"payload": json.dumps(sneaky)}).encode(), FORM) is None
    assert parse_submission(b"payload=" + b"x" * 70_000, FORM) is None


def test_a_refused_edit_is_shown_under_the_field_it_names() -> None:
    fields = {"amount": {}, "reason": {}}
    assert field_errors("amount: more than 0", fields) == {
        "response_action": "errors",
        "errors": {"field:amount": "amount: more than 0"},
    }
    assert field_errors("the edit changes nothing: approve it as it is", fields)["errors"] == {
        "field:amount": "the edit changes nothing: approve it as it is"
    }
