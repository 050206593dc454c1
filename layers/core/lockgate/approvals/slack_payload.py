"""A click on one of our buttons, from Slack's interaction request: parsed only after the signature
verified, strictly, with size limits. Anything else Slack might send there is refused (the edit
modal's submission is parsed by ``lockgate.approvals.slack_modal``, from the same form field)."""

from __future__ import annotations

from typing import Annotated, Literal
from urllib.parse import parse_qsl

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from lockgate.approvals.decisions import Choice
from lockgate.approvals.slack_messages import ACTIONS, EDIT_ACTION, parse_button_value
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


class Interaction(_Strict):
    """Who acted, from which workspace and organisation: what every interaction payload carries."""

    user: _User
    team: _Team | None = None  # null for some org-wide installs: then no workspace can be confirmed
    enterprise: _Enterprise | None = None

    def actor(self) -> dict[str, str]:
        """The ``SlackActor`` fields of this payload."""
        return {
            "user": self.user.id,
            "team_id": self.team.id if self.team else "",
            "user_team_id": self.user.team_id or "",
            "enterprise_id": self.enterprise.id if self.enterprise else "",
        }


class _BlockActions(Interaction):
    type: Literal["block_actions"]
    actions: Annotated[list[_Action], Field(min_length=1, max_length=1)]
    response_url: Annotated[str, StringConstraints(max_length=1_000)]
    trigger_id: Annotated[str, StringConstraints(max_length=255)] = ""  # opens a modal, for 3 seconds


class SlackActor(BaseModel):
    """Who acted in Slack, from which workspace, as Slack signed it (compared, never trusted alone)."""

    model_config = ConfigDict(frozen=True)

    user: str
    team_id: str  # the workspace the request came from ("" when Slack sent none)
    user_team_id: str  # the acting user's own workspace ("" when Slack sent none)
    enterprise_id: str  # the Enterprise Grid organisation ("" when none)

    @property
    def who(self) -> str:
        """``T0123/U0ALICE01``: the workspace and user, as a refusal records them."""
        return f"{self.team_id or '-'}/{self.user}"

    def from_workspace(self, team_id: str, enterprise_id: str | None) -> bool:
        """Whether the request and the acting user are both of workspace ``team_id`` (and org)."""
        if self.team_id != team_id or self.user_team_id not in ("", team_id):
            return False
        return enterprise_id is None or self.enterprise_id == enterprise_id


class SlackClick(SlackActor):
    """Who clicked (from which workspace) which of our buttons on which proposal, and where to answer."""

    choice: Choice  # Approve or Reject; Edit is an approval of a changed version, made in the modal
    approval_id: str
    fingerprint: str
    response_url: str
    edit: bool = False  # the Edit button: open the modal with ``trigger_id``, decide nothing yet
    trigger_id: str = ""


def form_payload(body: bytes, content_type: str) -> str | None:
    """The JSON text of the one ``payload`` field Slack posts, or None if the request is not that."""
    if content_type.partition(";")[0].strip().lower() != FORM_CONTENT_TYPE or len(body) > MAX_BODY_BYTES:
        return None
    try:
        fields = parse_qsl(body.decode("utf-8"), strict_parsing=True, errors="strict", max_num_fields=4)
    except ValueError:  # undecodable, malformed, or too many fields
        return None
    if len(fields) != 1 or fields[0][0] != "payload":  # Slack sends the one field, nothing else
        return None
    return fields[0][1]


def parse_click(body: bytes, content_type: str) -> SlackClick | None:
    """The click in a verified interaction request, or None if it is not a click on our buttons."""
    payload = form_payload(body, content_type)
    if payload is None:
        return None
    try:
        interaction = _BlockActions.model_validate_json(payload)
    except ValidationError:
        return None
    (action,) = interaction.actions
    edit = action.action_id == EDIT_ACTION
    choice = Choice.APPROVE if edit else ACTIONS.get(action.action_id)
    target = parse_button_value(action.value)
    if choice is None or target is None:
        return None
    return SlackClick(
        **interaction.actor(),
        choice=choice,
        approval_id=target[0],
        fingerprint=target[1],
        response_url=interaction.response_url,
        edit=edit,
        trigger_id=interaction.trigger_id,
    )
