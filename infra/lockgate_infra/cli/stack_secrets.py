"""A stack's webhook secrets, model key, Slack and MCP credentials as `lockgate secrets` sees them:
references, states, no values."""

from __future__ import annotations

import getpass
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from lockgate.config import LockgateConfig, SourceConfig
from lockgate.dynamo import error_code
from lockgate.errors import ConfigError
from lockgate.secrets import secret_values
from lockgate.webhooks.schemes import check_secrets
from lockgate_infra.cli.targets import TargetError

MODEL_KEY = "model-key"  # the name `secrets` uses for the worker's Anthropic API key
SLACK_BOT, SLACK_SIGNING = "slack-bot", "slack-signing"  # [approvals.slack]'s two secrets
MCP = "mcp-"  # + a server's name: [mcp.servers.NAME]'s credential
RECEIVER, WORKER = "WebhookReceiverFunction", "AgentWorkerFunction"
NOTIFIER, CALLBACK = "ApprovalNotifierFunction", "ApprovalCallbackFunction"
READER = {RECEIVER: "the receiver", WORKER: "the worker", NOTIFIER: "the notifier", CALLBACK: "the callback"}


@dataclass(frozen=True)
class Entry:
    """One secret a function reads: whose it is, and the reference lockgate.toml or the template gives."""

    name: str  # a source, MODEL_KEY, SLACK_BOT, SLACK_SIGNING or mcp-<server>
    ref: str  # env:NAME or secretsmanager:NAME
    source: SourceConfig | None  # None for the model key and Slack's secrets
    readable: str | None = None  # the names the function's role may read, e.g. "lockgate/webhooks/"
    function: str = RECEIVER  # the function that reads it (its environment, its role)
    what: str = "the model API"  # for the secret's description when it is created


@dataclass(frozen=True)
class Finding:
    """What an entry's secret looks like now (never its value)."""

    entry: Entry
    state: str  # present | rotating | missing | empty | unusable | unreadable | env | local
    detail: str = ""
    changed: str = "-"

    @property
    def ok(self) -> bool:
        """True if the function can verify (or call the model) with it."""
        return self.state in ("present", "rotating", "env", "local")


class StackSecrets:
    """One stack's secrets: its Secrets Manager, its config, and its functions' environments."""

    def __init__(
        self,
        secretsmanager: Any,
        config: LockgateConfig,
        environment: Callable[[str], Mapping[str, str]] | None,
    ) -> None:
        self._sm = secretsmanager
        self._config = config
        self._environment = environment  # logical id → variables; None: the local stack (no model key here)

    def entries(self) -> list[Entry]:
        """Every source's references, then the model key."""
        env = self._environment
        prefix = env(RECEIVER).get("SECRETS_PREFIX", "").strip() if env else ""
        readable = f"{prefix}/webhooks/" if prefix else None
        found = [
            Entry(s.name, ref, s, readable, what=f"source {s.name}")
            for s in self._config.sources.values()
            for ref in s.secrets
        ]
        model_ref = env(WORKER).get("ANTHROPIC_API_KEY_REF", "env:ANTHROPIC_API_KEY") if env else "local"
        # Bedrock and Claude Platform on AWS sign with the worker's role: there is no model key.
        model = (
            [Entry(MODEL_KEY, model_ref, None, function=WORKER)] if self._config.provider.uses_api_key else []
        )
        return [*found, *model, *self._slack(prefix), *self._mcp(prefix)]

    def _slack(self, prefix: str) -> list[Entry]:
        """[approvals.slack]'s bot token (the notifier's, and the callback's for views.open) and signing
        secret (the callback's), if set."""
        slack = self._config.approvals.slack
        if slack is None:
            return []
        # The template lets the roles read exactly {SecretsPrefix}/slack/bot (both) or /slack/signing.
        bot, signing = (f"{prefix}/slack/{leaf}" if prefix else None for leaf in ("bot", "signing"))
        return [
            Entry(SLACK_BOT, slack.bot_token, None, bot, NOTIFIER, "Slack approvals (bot token)"),
            Entry(SLACK_SIGNING, slack.signing_secret, None, signing, CALLBACK, "Slack approvals (signing)"),
        ]

    def _mcp(self, prefix: str) -> list[Entry]:
        """Each MCP server's credential (the worker's, and the jobs' for reconcile tools), if it has one."""
        readable = f"{prefix}/mcp/" if prefix else None
        return [
            Entry(f"{MCP}{name}", server.credential, None, readable, WORKER, f"MCP server {name}")
            for name, server in self._config.mcp.items()
            if server.credential
        ]

    def entry(self, name: str) -> Entry:
        """The Secrets Manager entry `set` and `rotate-*` write for ``name``."""
        matching = [e for e in self.entries() if e.name == name]
        if not matching:
            known = ", ".join(sorted({e.name for e in self.entries()}))
            raise ConfigError(f"no source {name!r} in lockgate.toml; choose one of {known}")
        managed = [e for e in matching if e.ref.startswith("secretsmanager:")]
        if not managed:
            where = (
                "the local stack's model comes from `lockgate local --model`"
                if matching[0].ref == "local"
                else f"{matching[0].ref} is read from the function's environment"
            )
            raise ConfigError(f"{name}: {where}, not from Secrets Manager; nothing to store here")
        return managed[0]

    def inspect(self, entry: Entry) -> Finding:
        """The entry's state, checked as the function would check it."""
        kind, _, name = entry.ref.partition(":")
        if kind != "secretsmanager":
            return self._inspect_outside(entry)
        if entry.readable and not name.startswith(entry.readable):
            return Finding(entry, "unreadable", f"{READER[entry.function]} may read only {entry.readable}*")
        value = self.read(entry)
        if value is None:
            return Finding(entry, "missing")
        changed = self._changed(name)
        if not value.strip():
            return Finding(entry, "empty", changed=changed)
        values = secret_values(value) if entry.source else [value]
        try:
            if entry.source:
                check_secrets(entry.source, values)
            elif value != value.strip():
                raise ConfigError("the key has leading or trailing whitespace")
        except ConfigError as exc:
            return Finding(entry, "unusable", str(exc), changed)
        return Finding(entry, "rotating" if len(values) > 1 else "present", changed=changed)

    def _inspect_outside(self, entry: Entry) -> Finding:
        if entry.ref == "local":
            return Finding(entry, "local", "chosen by `lockgate local --model`")
        name = entry.ref.partition(":")[2]
        env = self._environment(entry.function) if self._environment else {}
        if self._environment is not None and not env.get(name, "").strip():
            return Finding(entry, "missing", "not set in the function's environment")
        return Finding(entry, "env", "set in the function's environment (not managed here)")

    def read(self, entry: Entry) -> str | None:
        """The stored value, or None if the secret does not exist."""
        try:
            response = self._sm.get_secret_value(SecretId=_name(entry))
        except ClientError as exc:
            if error_code(exc) == "ResourceNotFoundException":
                return None
            raise TargetError(f"cannot read {entry.ref}: {error_code(exc)}") from exc
        except BotoCoreError as exc:
            raise TargetError(f"cannot read {entry.ref}: {type(exc).__name__}") from exc
        return str(response.get("SecretString") or "")

    def write(self, entry: Entry, value: str) -> None:
        """Store ``value`` as the secret's current version, creating the secret if needed."""
        name = _name(entry)
        try:
            try:
                self._sm.put_secret_value(SecretId=name, SecretString=value)
            except ClientError as exc:
                if error_code(exc) != "ResourceNotFoundException":
                    raise
                self._sm.create_secret(Name=name, SecretString=value, Description=f"Lockgate: {entry.what}")
        except (ClientError, BotoCoreError) as exc:
            code = error_code(exc) if isinstance(exc, ClientError) else type(exc).__name__
            raise TargetError(f"cannot store {entry.ref}: {code}") from exc

    def _changed(self, name: str) -> str:
        try:
            described = self._sm.describe_secret(SecretId=name)
        except (ClientError, BotoCoreError):
            return "-"
        when = described.get("LastChangedDate") or described.get("CreatedDate")
        return when.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC") if when else "-"


def _name(entry: Entry) -> str:
    return entry.ref.partition(":")[2]


def checked_value(entry: Entry, value: str) -> str:
    """``value`` if the function could use it; ConfigError (without the value) otherwise."""
    value = value.rstrip("\r\n")
    if not value.strip():
        raise ConfigError(f"no value given for {entry.name}")
    if secret_values(value) != [value]:
        raise ConfigError(f"{entry.name}: a JSON array is read as several secrets; use rotate-in to add one")
    if entry.source is not None:
        check_secrets(entry.source, [value])
    elif value != value.strip():
        raise ConfigError(f"{entry.name}: the key has leading or trailing whitespace")
    return value


def read_value(name: str, stdin: Any = None) -> str:
    """The value from stdin when it is piped in, else a prompt that does not echo."""
    stdin = stdin or sys.stdin
    if stdin.isatty():
        return getpass.getpass(f"value for {name} (not shown): ")
    return str(stdin.read())
