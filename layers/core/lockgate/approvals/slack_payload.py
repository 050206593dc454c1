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


# A workspace or organisation id as Slack sends it; compared with the configured one, never trusted.
_SlackId = Annotated[str, StringConstraints(pattern=r"^[A-Z0-9]{2,40}$")]


class _User(_Strict):
    id: Annotated[str, StringConstraints(pattern=SLACK_USER.pattern)]
    team_id: _SlackId | None = None  # the user's own workspace (another one's, in a shared channel)


class _Team(_Strict):
    id: _SlackId


class _Enterprise(_Strict):
    id: _SlackId


class _Action(_Strict):
    type: Literal["button"]
    action_id: Annotated[str, StringConstraints(max_length=255)]
    value: Annotated[str, StringConstraints(max_length=300)]


class _BlockActions(_Strict):
    type: Literal["block_actions"]
    user: _User
    team: _Team | None = None  # null for some org-wide installs: then no workspace can be confirmed
    enterprise: _Enterprise | None = None
    actions: Annotated[list[_Action], Field(min_length=1, max_length=1)]
    response_url: Annotated[str, StringConstraints(max_length=1_000)]


class SlackClick(BaseModel):
    """Who clicked (from which workspace) which of our buttons on which proposal, and where to answer."""

    model_config = ConfigDict(frozen=True)

    user: str
    team_id: str  # the workspace the click came from ("" when Slack sent none)
    user_team_id: str  # the clicking user's own workspace ("" when Slack sent none)
    enterprise_id: str  # the Enterprise Grid organisation ("" when none)
    choice: Choice
    approval_id: str
    fingerprint: str
    response_url: str

    @property
    def who(self) -> str:
        """``T0123/U0ALICE01``: the workspace and user, as a refusal records them."""
        return f"{self.team_id or '-'}/{self.user}"

    def from_workspace(self, team_id: str, enterprise_id: str | None) -> bool:
        """Whether the click and the clicking user are both of workspace ``team_id`` (and org)."""
        if self.team_id != team_id or self.user_team_id not in ("", team_id):
            return False
        return enterprise_id is None or self.enterprise_id == enterprise_id


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
        team_id=interaction.team.id if interaction.team else "",
        user_team_id=interaction.user.team_id or "",
        enterprise_id=interaction.enterprise.id if interaction.enterprise else "",
        choice=choice,
        approval_id=target[0],
        fingerprint=target[1],
        response_url=interaction.response_url,
    )
