"""The webhook receiver's settings."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from lockgate.settings.environ import config_file, required, stage_name, whole_number


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
            config_path=config_file(environ),
            stage=stage_name(environ),
            inbox_table=required(environ, "INBOX_TABLE"),
            inbox_queue_url=required(environ, "INBOX_QUEUE_URL"),
            body_bucket=required(environ, "BODY_BUCKET"),
            timeout_seconds=whole_number(environ, "RECEIVER_TIMEOUT_SECONDS", 10),
        )
