"""The agent worker's settings."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from lockgate.settings.environ import config_file, dollars, required, stage_name, whole_number

if TYPE_CHECKING:
    from lockgate.config import BudgetConfig


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
    model_key_ref: str = "env:ANTHROPIC_API_KEY"  # where the model API key is read from (Anthropic API)
    # LOCKGATE_MODEL_PROVIDER: the template's ModelProvider, whose IAM the role has; it must be
    # lockgate.toml's [provider] name (checked when the worker starts). None: not deployed by SAM.
    model_provider: str | None = None
    model_base_url: str | None = None  # ANTHROPIC_BASE_URL: a stand-in API locally and in tests
    snap_start: bool = False  # initialised into a SnapStart snapshot
    stage: str | None = None  # LOCKGATE_STAGE: stages/<stage>.toml is merged over the config
    record_concurrency: int = 10  # WORKER_RECORD_CONCURRENCY: an SQS batch's records at once (1: in turn)

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> WorkerSettings:
        """Validate the environment; ConfigError names what is missing."""
        return cls(
            config_path=config_file(environ),
            stage=stage_name(environ),
            inbox_table=required(environ, "INBOX_TABLE"),
            state_table=required(environ, "STATE_TABLE"),
            inbox_queue_url=required(environ, "INBOX_QUEUE_URL"),
            inbox_dlq_url=required(environ, "INBOX_DLQ_URL"),
            body_bucket=required(environ, "BODY_BUCKET"),
            timeout_seconds=whole_number(environ, "WORKER_TIMEOUT_SECONDS", 300),
            daily_budget_usd=dollars(environ, "LOCKGATE_DAILY_BUDGET_USD"),
            approvals_table=environ.get("APPROVALS_TABLE") or None,
            decisions_table=environ.get("DECISIONS_TABLE") or None,
            model_key_ref=environ.get("ANTHROPIC_API_KEY_REF") or "env:ANTHROPIC_API_KEY",
            model_base_url=environ.get("ANTHROPIC_BASE_URL") or None,
            model_provider=environ.get("LOCKGATE_MODEL_PROVIDER") or None,
            snap_start=environ.get("AWS_LAMBDA_INITIALIZATION_TYPE") == "snap-start",
            record_concurrency=whole_number(environ, "WORKER_RECORD_CONCURRENCY", 10),
        )

    def budget(self, configured: BudgetConfig) -> BudgetConfig:
        """lockgate.toml's budget, with the deployment's daily cap when one is set."""
        if self.daily_budget_usd is None:
            return configured
        return replace(configured, daily_usd=self.daily_budget_usd)
