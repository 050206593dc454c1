"""``[approvals.slack]`` and reviewers' ``slack_user``: optional, validated, named in every error; the
workspace (``team_id``) is required, so a click from another workspace is never taken."""

from __future__ import annotations

from typing import Any

import pytest

from lockgate.config import SlackApprovals, parse_config
from lockgate.errors import ConfigError

SLACK = {
    "channel": "C0123ABCD",
    "bot_token": "secretsmanager:lockgate/slack/bot",
    "signing_secret": "secretsmanager:lockgate/slack/signing",
    "team_id": "T0123TEAM",
}
ALICE = {"id": "alice", "roles": ["refunds"], "slack_user": "U0ALICE1"}
BOB = {"id": "bob", "roles": ["refunds"], "slack_user": "U0BOB002"}


def _approvals(**approvals: Any) -> dict[str, Any]:
    return {"sources": {}, "approvals": approvals}


def test_given_the_slack_section_and_mapped_reviewers_then_both_parse() -> None:
    config = parse_config(_approvals(slack=SLACK, reviewers=[ALICE, BOB])).approvals
    assert config.slack == SlackApprovals(
        channel="C0123ABCD",
        bot_token="secretsmanager:lockgate/slack/bot",
        signing_secret="secretsmanager:lockgate/slack/signing",
        team_id="T0123TEAM",
        tolerance_seconds=300,
        enterprise_id=None,
    )
    assert config.slack_reviewer("U0BOB002") is not None
    assert config.slack_reviewer("U0BOB002").id == "bob"  # type: ignore[union-attr]
    assert config.slack_reviewer("U0NOBODY") is None


def test_given_an_enterprise_grid_org_then_it_is_pinned_alongside_the_workspace() -> None:
    config = parse_config(_approvals(slack={**SLACK, "enterprise_id": "E0123ORG"})).approvals
    assert config.slack is not None
    assert (config.slack.team_id, config.slack.enterprise_id) == ("T0123TEAM", "E0123ORG")


def test_given_no_slack_section_then_the_file_reads_as_before() -> None:
    config = parse_config(_approvals(reviewers=[{"id": "carol"}])).approvals
    assert config.slack is None
    assert config.reviewers[0].slack_user is None
    assert config.slack_reviewer("") is None  # a reviewer without a Slack user is never matched


@pytest.mark.parametrize(
    ("slack", "reviewers", "message"),
    [
        ({**SLACK, "channel": "#approvals"}, [], r"slack: channel is a Slack channel id"),
        ({**SLACK, "bot_token": "xoxb-123"}, [], r"slack: bot_token is a secret reference"),
        ({**SLACK, "signing_secret": "env:"}, [], r"slack: signing_secret is a secret reference"),
        ({**SLACK, "signing_secret": SLACK["bot_token"]}, [], r"must be different secrets"),
        ({**SLACK, "tolerance_seconds": 3600}, [], r"tolerance_seconds is a whole number from 1 to 300"),
        ({**SLACK, "webhook": "https://x"}, [], r"slack: unknown key\(s\) \['webhook'\]"),
        ({k: v for k, v in SLACK.items() if k != "channel"}, [], r"slack: channel is"),
        # Without the workspace, any workspace's click carrying a mapped user id would decide.
        (
            {k: v for k, v in SLACK.items() if k != "team_id"},
            [],
            r"\[approvals\] slack: team_id is required: the id of your Slack workspace, "
            r'e\.g\. team_id = "T0123ABCD"',
        ),
        ({**SLACK, "team_id": "acme"}, [], r"slack: team_id is a Slack workspace id"),
        ({**SLACK, "team_id": "E0123ORG"}, [], r"slack: team_id is a Slack workspace id"),
        ({**SLACK, "enterprise_id": "T0123TEAM"}, [], r"slack: enterprise_id is an Enterprise Grid id"),
        (SLACK, [{**ALICE, "slack_user": "@alice"}], r"reviewers\[0\]: slack_user is a Slack user id"),
        (SLACK, [ALICE, {**BOB, "slack_user": "U0ALICE1"}], r"each slack_user may be given to one reviewer"),
    ],
)
def test_given_a_mistake_then_the_error_names_it(slack: Any, reviewers: list[Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_config(_approvals(slack=slack, reviewers=reviewers))
