"""Reading one environment variable: required, a positive whole number, a dollar amount."""

from __future__ import annotations

from collections.abc import Mapping

from lockgate.errors import ConfigError


def required(environ: Mapping[str, str], name: str) -> str:
    """The variable's value, stripped; ConfigError when it is unset or blank."""
    value = environ.get(name, "").strip()
    if not value:
        raise ConfigError(f"environment variable {name} is required")
    return value


def whole_number(environ: Mapping[str, str], name: str, default: int) -> int:
    """A positive whole number, ``default`` when unset; ConfigError for anything else."""
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    if not raw.isdigit() or int(raw) <= 0:
        raise ConfigError(f"environment variable {name} must be a positive whole number, got {raw!r}")
    return int(raw)


def dollars(environ: Mapping[str, str], name: str) -> float | None:
    """A dollar amount of zero or more, None when unset; ConfigError for anything else (nan too)."""
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


def config_file(environ: Mapping[str, str]) -> str:
    """LOCKGATE_CONFIG: the config file, relative to the handler's folder (default lockgate.toml)."""
    return environ.get("LOCKGATE_CONFIG", "lockgate.toml")


def stage_name(environ: Mapping[str, str]) -> str | None:
    """LOCKGATE_STAGE: stages/<stage>.toml is merged over the config; None when unset."""
    return environ.get("LOCKGATE_STAGE", "").strip() or None
