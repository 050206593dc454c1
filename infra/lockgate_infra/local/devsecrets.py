"""Development webhook secrets for the embedded stack: fixed, documented, never for production."""

from __future__ import annotations

import base64
from typing import Any

from lockgate.config import LockgateConfig, SourceConfig

# [approvals.slack]'s secrets on the embedded stack (the local Slack stub expects this bot token).
SLACK_DEV_SECRETS = {
    "bot_token": "xoxb-lockgate-local-bot-token",
    "signing_secret": "lockgate-local-slack-signing-secret",
}


def dev_secret(source: SourceConfig) -> str:
    """The local value of a source's secret: predictable, so you can sign requests by hand."""
    raw = f"lockgate-local-{source.name}-secret"
    if source.scheme == "standard":
        return "whsec_" + base64.b64encode(raw.encode()).decode()
    return raw


def seed_dev_secrets(config: LockgateConfig, secretsmanager: Any) -> dict[str, str]:
    """Create every ``secretsmanager:`` secret the config names; return source name → value.

    ``[approvals.slack]``'s bot token and signing secret are listed as ``approvals.slack.<key>``.
    """
    values: dict[str, str] = {}
    for source in config.sources.values():
        value = dev_secret(source)
        values[source.name] = value
        for ref in source.secrets:
            _store(secretsmanager, ref, value)
    slack = config.approvals.slack
    if slack is not None:
        for key, ref in (("bot_token", slack.bot_token), ("signing_secret", slack.signing_secret)):
            values[f"approvals.slack.{key}"] = SLACK_DEV_SECRETS[key]
            _store(secretsmanager, ref, SLACK_DEV_SECRETS[key])
    return values


def _store(secretsmanager: Any, ref: str, value: str) -> None:
    kind, _, name = ref.partition(":")
    if kind != "secretsmanager":
        return
    try:
        secretsmanager.create_secret(Name=name, SecretString=value)
    except secretsmanager.exceptions.ResourceExistsException:
        secretsmanager.put_secret_value(SecretId=name, SecretString=value)
