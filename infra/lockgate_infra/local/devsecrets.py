"""Development secrets for the embedded stack: fixed, documented, never for production.

- a webhook source's: ``lockgate-local-<source>-secret`` (``whsec_`` + its base64 for Standard Webhooks);
- ``[approvals.slack]``'s bot token and signing secret: ``SLACK_DEV_SECRETS`` (the Slack stand-in's);
- an MCP server's credential: ``lockgate-local-mcp-<server>-token`` (``mcp_dev_credential``), which a
  workflow's local stand-in for that server accepts (``local_stand_ins(dev_secrets)`` gets it as
  ``dev_secrets["mcp.<server>"]``).
"""

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


def mcp_dev_credential(server: str) -> str:
    """The local value of an MCP server's credential (``[mcp.servers.NAME] credential``)."""
    return f"lockgate-local-mcp-{server}-token"


def dev_secrets(config: LockgateConfig) -> dict[str, tuple[str, tuple[str, ...]]]:
    """Every development secret the config needs: its name (as the banner lists it) → (value, the
    references it is stored under).

    A source is listed by its name, ``[approvals.slack]``'s secrets as ``approvals.slack.<key>``, an
    MCP server's credential as ``mcp.<server>``.
    """
    found: dict[str, tuple[str, tuple[str, ...]]] = {}
    for source in config.sources.values():
        found[source.name] = (dev_secret(source), tuple(source.secrets))
    slack = config.approvals.slack
    if slack is not None:
        for key, ref in (("bot_token", slack.bot_token), ("signing_secret", slack.signing_secret)):
            found[f"approvals.slack.{key}"] = (SLACK_DEV_SECRETS[key], (ref,))
    for name, server in config.mcp.items():
        if server.credential.startswith("secretsmanager:"):  # an env: one is the environment's to give
            found[f"mcp.{name}"] = (mcp_dev_credential(name), (server.credential,))
    return found


def dev_secret_values(config: LockgateConfig) -> dict[str, str]:
    """Each development secret's value, by name (see ``dev_secrets``), without storing anything."""
    return {name: value for name, (value, _) in dev_secrets(config).items()}


def seed_dev_secrets(config: LockgateConfig, secretsmanager: Any) -> dict[str, str]:
    """Create every ``secretsmanager:`` secret the config names; return each value by name (see
    ``dev_secrets``)."""
    values: dict[str, str] = {}
    for name, (value, refs) in dev_secrets(config).items():
        values[name] = value
        for ref in refs:
            _store(secretsmanager, ref, value)
    return values


def _store(secretsmanager: Any, ref: str, value: str) -> None:
    kind, _, name = ref.partition(":")
    if kind != "secretsmanager":
        return
    try:
        secretsmanager.create_secret(Name=name, SecretString=value)
    except secretsmanager.exceptions.ResourceExistsException:
        secretsmanager.put_secret_value(SecretId=name, SecretString=value)
