"""The approval side's settings: the callback and the notifier."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from lockgate.settings.environ import config_file, required, stage_name, whole_number


@dataclass(frozen=True)
class ApprovalSettings:
    """The approval side's environment: the callback (pages, decisions) and the notifier (links)."""

    config_path: str
    approvals_table: str
    link_secret_ref: str
    base_url: str
    channels: tuple[str, ...]
    from_address: str
    decisions_table: str | None  # only the callback may write decisions
    inbox_table: str | None
    inbox_queue_url: str | None
    channel_refs: Mapping[str, str] = field(default_factory=dict)  # slack/discord → webhook secret ref
    timeout_seconds: int = 30  # the function's Timeout: AWS client timeouts are sized to it
    stage: str | None = None  # LOCKGATE_STAGE: stages/<stage>.toml is merged over the config
    state_table: str | None = None  # LINK_RESEND_TABLE: the State table, for its link re-send rows only
    ledger_table: str | None = None  # LEDGER_TABLE: the State table, to read an approved action's state
    slack_api_url: str = "https://slack.com/api"  # SLACK_API_URL: the local stub's, on the embedded stack
    slack_response_prefix: str = "https://hooks.slack.com/"  # SLACK_RESPONSE_URL_PREFIX: likewise
    # The notifier's, for [approvals.slack]: SLACK_MESSAGE_TABLE (the State table, its "slack-message#"
    # rows only: each message's claim and ts) and DECISIONS_READ_TABLE (Decisions, read only).
    slack_message_table: str | None = None
    decisions_read_table: str | None = None
    # VERSION_CHECK_FUNCTION: the agent worker's alias, which the callback asks whether an edited
    # version would run (lockgate.approvals.checking); unset: edits are refused, approvals still work.
    version_check_function: str | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> ApprovalSettings:
        """Validate the environment; ConfigError names what is missing."""
        secret = required(environ, "APPROVAL_LINK_SECRET_ARN")
        return cls(
            config_path=config_file(environ),
            stage=stage_name(environ),
            approvals_table=required(environ, "APPROVALS_TABLE"),
            link_secret_ref=secret
            if ":" in secret and secret.split(":")[0] in ("env", "secretsmanager")
            else f"secretsmanager:{secret}",
            base_url=environ.get("APPROVAL_BASE_URL", "").strip() or "/approvals",
            channels=tuple(
                c.strip() for c in environ.get("APPROVAL_CHANNELS", "email").split(",") if c.strip()
            ),
            from_address=environ.get("SHOP_FROM_ADDRESS", "").strip() or "support@shop.example.com",
            decisions_table=environ.get("DECISIONS_TABLE") or None,
            inbox_table=environ.get("INBOX_TABLE") or None,
            inbox_queue_url=environ.get("INBOX_QUEUE_URL") or None,
            channel_refs={
                name: ref
                for name in ("slack", "discord")
                if (ref := environ.get(f"APPROVAL_{name.upper()}_WEBHOOK_REF", "").strip())
            },
            timeout_seconds=whole_number(environ, "APPROVAL_TIMEOUT_SECONDS", 30),
            state_table=environ.get("LINK_RESEND_TABLE") or None,
            ledger_table=environ.get("LEDGER_TABLE") or None,
            slack_api_url=environ.get("SLACK_API_URL", "").strip() or "https://slack.com/api",
            slack_response_prefix=environ.get("SLACK_RESPONSE_URL_PREFIX", "").strip()
            or "https://hooks.slack.com/",
            slack_message_table=environ.get("SLACK_MESSAGE_TABLE") or None,
            decisions_read_table=environ.get("DECISIONS_READ_TABLE") or None,
            version_check_function=environ.get("VERSION_CHECK_FUNCTION", "").strip() or None,
        )
