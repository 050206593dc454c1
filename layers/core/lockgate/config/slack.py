"""Reading ``[approvals.slack]`` and reviewers' ``slack_user``: ids and secret references, checked."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from lockgate.config.model import Reviewer, SlackApprovals
from lockgate.config.sources import SECRET_PREFIXES
from lockgate.errors import ConfigError

# Slack's ids: users U… (W… on Enterprise Grid), channels C… (G… for older private channels).
SLACK_USER = re.compile(r"^[UW][A-Z0-9]{2,30}$")
SLACK_CHANNEL = re.compile(r"^[CG][A-Z0-9]{2,30}$")
# Workspaces are T…, Enterprise Grid organisations E….
SLACK_TEAM = re.compile(r"^T[A-Z0-9]{2,30}$")
SLACK_ENTERPRISE = re.compile(r"^E[A-Z0-9]{2,30}$")
_KEYS = {"channel", "bot_token", "signing_secret", "tolerance_seconds", "team_id", "enterprise_id"}


def parse_slack(value: Any, where: str) -> SlackApprovals | None:
    """The Slack app settings, or None when the section is absent."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where} must be a table")
    unknown = set(value) - _KEYS
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {sorted(unknown)}")
    channel = value.get("channel")
    if not isinstance(channel, str) or not SLACK_CHANNEL.match(channel):
        raise ConfigError(f'{where}: channel is a Slack channel id such as "C0123ABCD" (not its #name)')
    refs = {key: value.get(key) for key in ("bot_token", "signing_secret")}
    for key, ref in refs.items():
        if not isinstance(ref, str) or not ref.startswith(SECRET_PREFIXES) or ref.endswith(":"):
            example = "secretsmanager:lockgate/slack/bot"
            raise ConfigError(f'{where}: {key} is a secret reference, e.g. "{example}"')
    if refs["bot_token"] == refs["signing_secret"]:
        raise ConfigError(f"{where}: bot_token and signing_secret must be different secrets")
    tolerance = value.get("tolerance_seconds", 300)
    if isinstance(tolerance, bool) or not isinstance(tolerance, int) or not 0 < tolerance <= 300:
        raise ConfigError(f"{where}: tolerance_seconds is a whole number from 1 to 300")
    return SlackApprovals(
        channel=channel,
        bot_token=str(refs["bot_token"]),
        signing_secret=str(refs["signing_secret"]),
        team_id=_team(value.get("team_id"), where),
        tolerance_seconds=tolerance,
        enterprise_id=_enterprise(value.get("enterprise_id"), where),
    )


def _team(value: Any, where: str) -> str:
    """The one workspace whose clicks may decide: required, so a click from another is never taken."""
    if value is None:
        raise ConfigError(
            f'{where}: team_id is required: the id of your Slack workspace, e.g. team_id = "T0123ABCD" '
            "(the T... in app.slack.com/client/T.../ when Slack is open in a browser); a click from any "
            "other workspace is refused"
        )
    if not isinstance(value, str) or not SLACK_TEAM.match(value):
        raise ConfigError(f'{where}: team_id is a Slack workspace id such as "T0123ABCD" (not its name)')
    return value


def _enterprise(value: Any, where: str) -> str | None:
    """The Enterprise Grid organisation a click must also come from, or None."""
    if value is None:
        return None
    if not isinstance(value, str) or not SLACK_ENTERPRISE.match(value):
        raise ConfigError(f'{where}: enterprise_id is an Enterprise Grid id such as "E0123ABCD"')
    return value


def parse_slack_user(value: Any, where: str) -> str | None:
    """A reviewer's Slack user id, or None when they have none."""
    if value is None:
        return None
    if not isinstance(value, str) or not SLACK_USER.match(value):
        raise ConfigError(f'{where}: slack_user is a Slack user id such as "U0123ABCD" (not a name)')
    return value


def unique_slack_users(reviewers: Sequence[Reviewer], where: str) -> None:
    """One Slack user decides as one reviewer: a user mapped twice would count as two people."""
    users = [r.slack_user for r in reviewers if r.slack_user]
    if len(set(users)) != len(users):
        raise ConfigError(f"{where}: each slack_user may be given to one reviewer only")
