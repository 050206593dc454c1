"""A click on one of our buttons, from Slack's interaction request: parsed only after the signature
verified, strictly, with size limits. Anything else Slack might send there is refused."""

from __future__ import annotations

from typing import Annotated, Literal
from urllib.parse import parse_qsl

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from lockgate.approvals.decisions import Choice
from lockgate.approvals.slack_messages import ACTIONS, parse_button_value
from lockgate.config.slack import SLACK_USER

MAX_BODY_BYTES = 64 * 1024  # our messages are a few KB; Slack's payload repeats the message
FORM_CONTENT_TYPE = "application/x-www-form-urlencoded"


class _Strict(BaseModel):
    # Slack adds fields over time (trigger_id, container, state...): ignored, never trusted.
    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)


class _User(_Strict):
    id: Annotated[str, StringConstraints(pattern=SLACK_USER.pattern)]


class _Action(_Strict):
    type: Literal["button"]
    action_id: Annotated[str, StringConstraints(max_length=255)]
    value: Annotated[str, StringConstraints(max_length=300)]


class _BlockActions(_Strict):
    type: Literal["block_actions"]
    user: _User
    actions: Annotated[list[_Action], Field(min_length=1, max_length=1)]
    response_url: Annotated[str, StringConstraints(max_length=1_000)]


class SlackClick(BaseModel):
    """Who clicked which of our buttons on which proposal, and where to answer."""

    model_config = ConfigDict(frozen=True)

    user: str
    choice: Choice
    approval_id: str
    fingerprint: str
    response_url: str


def parse_click(body: bytes, content_type: str) -> SlackClick | None:
    """The click in a verified interaction request, or None if it is not a click on our buttons."""
    if content_type.partition(";")[0].strip().lower() != FORM_CONTENT_TYPE or len(body) > MAX_BODY_BYTES:
        return None
    try:
        fields = parse_qsl(body.decode("utf-8"), strict_parsing=True, errors="strict", max_num_fields=4)
    except ValueError:  # undecodable, malformed, or too many fields
        return None
    if len(fields) != 1 or fields[0][0] != "payload":  # Slack sends the one field, nothing else
        return None
    try:
        interaction = _BlockActions.model_validate_json(fields[0][1])
    except ValidationError:
        return None
    (action,) = interaction.actions
    choice = ACTIONS.get(action.action_id)
    target = parse_button_value(action.value)
    if choice is None or target is None:
        return None
    return SlackClick(
        user=interaction.user.id,
        choice=choice,
        approval_id=target[0],
        fingerprint=target[1],
        response_url=interaction.response_url,
    )
