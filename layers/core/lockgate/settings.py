"""Per-function settings, read from the environment once, at cold start, by the handler.

One class per function, listing every variable that function reads; the composition roots in
``lockgate.runtime`` take these, never ``os.environ``. Frozen dataclasses rather than pydantic
models: the receiver's cold start budget (≤10% over a bare boto3 handler) cannot afford pydantic's
import.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from lockgate.errors import ConfigError

if TYPE_CHECKING:  # only a type here: importing it would build every config type at the receiver's cold start
    from lockgate.config import BudgetConfig


def _required(environ: Mapping[str, str], name: str) -> str:
    value = environ.get(name, "").strip()
    if not value:
        raise ConfigError(f"environment variable {name} is required")
    return value


def _int(environ: Mapping[str, str], name: str, default: int) -> int:
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    if not raw.isdigit() or int(raw) <= 0:
        raise ConfigError(f"environment variable {name} must be a positive whole number, got {raw!r}")
    return int(raw)


def _dollars(environ: Mapping[str, str], name: str) -> float | None:
    raw = environ.get(name, "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value >= 0:  # also refuses nan
        raise ConfigError(f"environment variable {name} must be a dollar amount, got {raw!r}")
    return value


@dataclass(frozen=True)
class ReceiverSettings:
    """What the webhook receiver needs to know about its environment."""

    config_path: str
    inbox_table: str
    inbox_queue_url: str
    body_bucket: str
    timeout_seconds: int = 10  # the function's Timeout: AWS client timeouts are sized to it
    stage: str | None = None  # LOCKGATE_STAGE: stages/<stage>.toml is merged over the config

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> ReceiverSettings:
        """Validate the environment; ConfigError names what is missing."""
        return cls(
            config_path=environ.get("LOCKGATE_CONFIG", "lockgate.toml"),
            stage=environ.get("LOCKGATE_STAGE", "").strip() or None,
            inbox_table=_required(environ, "INBOX_TABLE"),
            inbox_queue_url=_required(environ, "INBOX_QUEUE_URL"),
            body_bucket=_required(environ, "BODY_BUCKET"),
            timeout_seconds=_int(environ, "RECEIVER_TIMEOUT_SECONDS", 10),
        )


@dataclass(frozen=True)
class WorkerSettings:
    """What the agent worker needs to know about its environment."""

    config_path: str
    inbox_table: str
    state_table: str
    inbox_queue_url: str
    inbox_dlq_url: str
    body_bucket: str
    timeout_seconds: int
    daily_budget_usd: float | None = None  # the template's DailyBudgetUsd; None keeps lockgate.toml's
    approvals_table: str | None = None  # proposals are written only when both tables are given
    decisions_table: str | None = None  # read-only for the worker: it re-checks decisions
    model_key_ref: str = "env:ANTHROPIC_API_KEY"  # where the model API key is read from
    model_base_url: str | None = None  # ANTHROPIC_BASE_URL: a stand-in API locally and in tests
    snap_start: bool = False  # initialised into a SnapStart snapshot
    stage: str | None = None  # LOCKGATE_STAGE: stages/<stage>.toml is merged over the config
    record_concurrency: int = 10  # WORKER_RECORD_CONCURRENCY: an SQS batch's records at once (1: in turn)

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> WorkerSettings:
        """Validate the environment; ConfigError names what is missing."""
        return cls(
            config_path=environ.get("LOCKGATE_CONFIG", "lockgate.toml"),
            stage=environ.get("LOCKGATE_STAGE", "").strip() or None,
            inbox_table=_required(environ, "INBOX_TABLE"),
            state_table=_required(environ, "STATE_TABLE"),
            inbox_queue_url=_required(environ, "INBOX_QUEUE_URL"),
            inbox_dlq_url=_required(environ, "INBOX_DLQ_URL"),
            body_bucket=_required(environ, "BODY_BUCKET"),
            timeout_seconds=_int(environ, "WORKER_TIMEOUT_SECONDS", 300),
            daily_budget_usd=_dollars(environ, "LOCKGATE_DAILY_BUDGET_USD"),
            approvals_table=environ.get("APPROVALS_TABLE") or None,
            decisions_table=environ.get("DECISIONS_TABLE") or None,
            model_key_ref=environ.get("ANTHROPIC_API_KEY_REF") or "env:ANTHROPIC_API_KEY",
            model_base_url=environ.get("ANTHROPIC_BASE_URL") or None,
            snap_start=environ.get("AWS_LAMBDA_INITIALIZATION_TYPE") == "snap-start",
            record_concurrency=_int(environ, "WORKER_RECORD_CONCURRENCY", 10),
        )

    def budget(self, configured: BudgetConfig) -> BudgetConfig:
        """lockgate.toml's budget, with the deployment's daily cap when one is set."""
        if self.daily_budget_usd is None:
            return configured
        return replace(configured, daily_usd=self.daily_budget_usd)


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

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> ApprovalSettings:
        """Validate the environment; ConfigError names what is missing."""
        secret = _required(environ, "APPROVAL_LINK_SECRET_ARN")
        return cls(
            config_path=environ.get("LOCKGATE_CONFIG", "lockgate.toml"),
            stage=environ.get("LOCKGATE_STAGE", "").strip() or None,
            approvals_table=_required(environ, "APPROVALS_TABLE"),
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
            timeout_seconds=_int(environ, "APPROVAL_TIMEOUT_SECONDS", 30),
            state_table=environ.get("LINK_RESEND_TABLE") or None,
            ledger_table=environ.get("LEDGER_TABLE") or None,
            slack_api_url=environ.get("SLACK_API_URL", "").strip() or "https://slack.com/api",
            slack_response_prefix=environ.get("SLACK_RESPONSE_URL_PREFIX", "").strip()
            or "https://hooks.slack.com/",
        )


@dataclass(frozen=True)
class JobsSettings:
    """What a jobs function (scheduled_jobs, eval_jobs) needs to know about its environment."""

    config_path: str
    state_table: str
    timeout_seconds: int
    names: Mapping[str, str]  # resource names, secret references and LOCKGATE_* settings, for the factories
    jobs: frozenset[str]  # the jobs this function runs (JOBS, comma-separated); empty: every job
    stage: str | None = None  # LOCKGATE_STAGE: stages/<stage>.toml is merged over the config

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> JobsSettings:
        """Validate the environment; ConfigError names what is missing."""
        return cls(
            config_path=environ.get("LOCKGATE_CONFIG", "lockgate.toml"),
            stage=environ.get("LOCKGATE_STAGE", "").strip() or None,
            state_table=_required(environ, "STATE_TABLE"),
            timeout_seconds=_int(environ, "JOBS_TIMEOUT_SECONDS", 300),
            names={
                k: v
                for k, v in environ.items()
                if k.endswith(("_TABLE", "_URL", "_ADDRESS", "_BUCKET", "_ARN", "_REF"))
                or k.startswith("LOCKGATE_")
            },
            jobs=frozenset(j.strip() for j in environ.get("JOBS", "").split(",") if j.strip()),
        )
