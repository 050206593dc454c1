"""A jobs function's settings (scheduled_jobs, eval_jobs)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from lockgate.settings.environ import config_file, required, stage_name, whole_number


@dataclass(frozen=True)
class JobsSettings:
    """What a jobs function (scheduled_jobs, eval_jobs) needs to know about its environment."""

    config_path: str
    state_table: str
    timeout_seconds: int
    names: Mapping[str, str]  # resource names, secret references and LOCKGATE_* settings, for the factories
    jobs: frozenset[str]  # the jobs this function runs (JOBS, comma-separated); empty: every job
    stage: str | None = None  # LOCKGATE_STAGE: stages/<stage>.toml is merged over the config
    environ: Mapping[str, str] = field(default_factory=dict)  # all of it: what the workflows' register sees

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> JobsSettings:
        """Validate the environment; ConfigError names what is missing."""
        return cls(
            config_path=config_file(environ),
            stage=stage_name(environ),
            state_table=required(environ, "STATE_TABLE"),
            timeout_seconds=whole_number(environ, "JOBS_TIMEOUT_SECONDS", 300),
            names={
                k: v
                for k, v in environ.items()
                if k.endswith(("_TABLE", "_URL", "_ADDRESS", "_BUCKET", "_ARN", "_REF"))
                or k.startswith("LOCKGATE_")
            },
            jobs=frozenset(j.strip() for j in environ.get("JOBS", "").split(",") if j.strip()),
            environ=dict(environ),
        )
