"""Editing in Slack: the "Edit…" button opens a modal with the editable fields; its submission is an
edit-and-approve decision, through the same ``DecisionRecorder`` as the page and the CLI.

The modal carries the approval id and the fingerprint of the version it showed (``private_metadata``),
so a submission made after someone else's edit is refused ("changed since you looked"). The
submission is parsed only after Slack's signature verified, strictly, with size limits; a value the
field's schema refuses is shown under that field and nothing is recorded.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, StringConstraints, ValidationError

from lockgate.approvals.edit_page import hint, shown
from lockgate.approvals.proposals import Proposal
from lockgate.approvals.slack_messages import escape
from lockgate.approvals.slack_payload import Interaction, SlackActor, form_payload
from lockgate.approvals.versions import MAX_EDITED_CHARS, editable

CALLBACK_ID = "lockgate_edit"  # the modal's callback_id, so a submission is known to be ours
VALUE_ACTION = "value"
FIELD_BLOCK = "field:"  # block_id prefix of each editable field's input
MAX_SUBMISSION_BYTES = 64 * 1024


def edit_view(proposal: Proposal, current: Mapping[str, Any], seen: str) -> dict[str, Any]:
    """The modal for ``views.open``: one input per editable field, prefilled with the current value."""
    fields = editable(proposal)
    inputs = [
        {
            "type": "input",
            "block_id": f"{FIELD_BLOCK}{name}",
            "label": {"type": "plain_text", "text": name.replace("_", " ")[:2000]},
            "hint": {"type": "plain_text", "text": (hint(schema) or "as the tool takes it")[:2000]},
            "element": {
                "type": "plain_text_input",
                "action_id": VALUE_ACTION,
                "initial_value": shown(current.get(name, ""))[:3000],
                "multiline": schema.get("type") == "string" and int(schema.get("maxLength", 0) or 0) > 200,
                "max_length": MAX_EDITED_CHARS,
            },
        }
        for name, schema in sorted(fields.items())
    ]
    return {
        "type": "modal",
        "callback_id": CALLBACK_ID,
        "private_metadata": json.dumps({"approval_id": proposal.approval_id, "seen": seen}),
        "title": {"type": "plain_text", "text": "Edit and approve"},
        "submit": {"type": "plain_text", "text": "Approve changes"},
        "close": {"type": "plain_text", "text": "Cancel"},
        "blocks": [
            {
                "type": "section",
                "text": {"type": "mrkdwn", "text": f"*{escape(proposal.summary)}*"},
            },
            {
                "type": "context",
                "elements": [
                    {
                        "type": "mrkdwn",
                        "text": "Only these fields may change. Your approval counts for the changed "
                        "version only, and the rules are checked again before it runs.",
                    }
                ],
            },
            *inputs,
        ],
    }


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)


class _Input(_Strict):
    type: Literal["plain_text_input"]
    value: Annotated[str, StringConstraints(max_length=MAX_EDITED_CHARS)] | None = None


class _View(_Strict):
    callback_id: Literal["lockgate_edit"]
    private_metadata: Annotated[str, StringConstraints(max_length=300)]
    state: dict[str, Any]


class _Submission(Interaction):
    type: Literal["view_submission"]
    view: _View


class SlackEdit(SlackActor):
    """Who submitted which changes to which proposal, from the version they were shown."""

    approval_id: str
    seen: str
    changes: dict[str, str]


def parse_submission(body: bytes, content_type: str) -> SlackEdit | None:
    """The edit in a verified ``view_submission`` of our modal, or None if it is not one."""
    payload = form_payload(body, content_type)
    if payload is None or len(body) > MAX_SUBMISSION_BYTES:
        return None
    try:
        submission = _Submission.model_validate_json(payload)
        meta = json.loads(submission.view.private_metadata)
    except (ValueError, ValidationError):
        return None
    if not isinstance(meta, dict) or not all(isinstance(meta.get(k), str) for k in ("approval_id", "seen")):
        return None
    values = submission.view.state.get("values", {})
    if not isinstance(values, dict):  # signed, but not the shape Slack sends: not our modal's submission
        return None
    changes: dict[str, str] = {}
    for block_id, actions in values.items():
        if not block_id.startswith(FIELD_BLOCK) or not isinstance(actions, dict):
            return None
        try:
            value = _Input.model_validate(actions.get(VALUE_ACTION)).value
        except ValidationError:
            return None
        changes[block_id[len(FIELD_BLOCK) :]] = value or ""
    return SlackEdit(
        **submission.actor(), approval_id=meta["approval_id"], seen=meta["seen"], changes=changes
    )


def notice(text: str) -> dict[str, Any]:
    """The submission's answer when nothing was recorded: the modal says why, with only Close."""
    return {
        "response_action": "update",
        "view": {
            "type": "modal",
            "title": {"type": "plain_text", "text": "Nothing recorded"},
            "close": {"type": "plain_text", "text": "Close"},
            "blocks": [{"type": "section", "text": {"type": "plain_text", "text": text[:2900]}}],
        },
    }


def field_errors(message: str, fields: Mapping[str, Any]) -> dict[str, Any]:
    """The submission's answer when an edit is refused: the message under the field it names."""
    name = next((f for f in fields if message.startswith(f"{f}:") or message.startswith(f"{f} ")), None)
    block = f"{FIELD_BLOCK}{name}" if name else f"{FIELD_BLOCK}{next(iter(sorted(fields)), '')}"
    return {"response_action": "errors", "errors": {block: message[:150]}}
