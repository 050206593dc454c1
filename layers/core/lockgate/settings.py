"""Per-function settings, read from the environment once, at cold start, by the handler.

Frozen dataclasses rather than pydantic models: the receiver's cold start budget
(≤15% over a bare boto3 handler) cannot afford pydantic's import.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from lockgate.errors import ConfigError


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


@dataclass(frozen=True)
class ReceiverSettings:
    """What the webhook receiver needs to know about its environment."""

    config_path: str
    inbox_table: str
    inbox_queue_url: str
    body_bucket: str

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> ReceiverSettings:
        """Validate the environment; ConfigError names what is missing."""
        return cls(
            config_path=environ.get("LOCKGATE_CONFIG", "lockgate.toml"),
            inbox_table=_required(environ, "INBOX_TABLE"),
            inbox_queue_url=_required(environ, "INBOX_QUEUE_URL"),
            body_bucket=_required(environ, "BODY_BUCKET"),
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

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> WorkerSettings:
        """Validate the environment; ConfigError names what is missing."""
        return cls(
            config_path=environ.get("LOCKGATE_CONFIG", "lockgate.toml"),
            inbox_table=_required(environ, "INBOX_TABLE"),
            state_table=_required(environ, "STATE_TABLE"),
            inbox_queue_url=_required(environ, "INBOX_QUEUE_URL"),
            inbox_dlq_url=_required(environ, "INBOX_DLQ_URL"),
            body_bucket=_required(environ, "BODY_BUCKET"),
            timeout_seconds=_int(environ, "WORKER_TIMEOUT_SECONDS", 300),
        )
