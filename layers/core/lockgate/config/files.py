"""Reading ``lockgate.toml`` and its stage overlay, and the checks every section's parser shares.

Stdlib only on purpose: the webhook receiver reads its sections at cold start, and pydantic
would add ~25% to its import time (see benchmarks/cold_start.py).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lockgate.errors import ConfigError

SECTIONS = frozenset(
    {
        "mcp",
        "sources",
        "inbox",
        "workflows",
        "approvals",
        "budget",
        "capacity",
        "schedules",
        "models",
        "provider",
    }
)
# The template's Stage pattern: a stage names a file, so nothing else may reach the path.
STAGE_NAME = re.compile(r"[a-z][a-z0-9-]{0,15}")


def read_config(path: str | Path, stage: str | None = None) -> tuple[dict[str, Any], str]:
    """The TOML document at ``path`` with ``stages/<stage>.toml`` merged over it, and where it came from."""
    p = Path(path)
    raw, origin = _read(p), str(p)
    overlay = stage_overlay(p, stage) if stage else None
    if overlay is not None and overlay.is_file():
        raw, origin = merge_tables(raw, _read(overlay)), f"{p} + {overlay}"
    return raw, origin


def stage_overlay(path: str | Path, stage: str) -> Path:
    """Where a stage's overlay of ``path`` lives: ``stages/<stage>.toml`` in the same directory."""
    if not STAGE_NAME.fullmatch(stage):
        raise ConfigError(f"stage {stage!r} is not a stage name (lowercase letters, digits and -)")
    return Path(path).parent / "stages" / f"{stage}.toml"


def merge_tables(base: Mapping[str, Any], overlay: Mapping[str, Any]) -> dict[str, Any]:
    """``overlay`` over ``base``: tables merge key by key; any other value (arrays too) replaces."""
    merged = dict(base)
    for key, value in overlay.items():
        below = merged.get(key)
        if isinstance(value, Mapping) and isinstance(below, Mapping):
            merged[key] = merge_tables(below, value)
        else:
            merged[key] = value
    return merged


def _read(p: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ConfigError(f"config file not found: {p}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{p}: not valid TOML: {exc}") from exc


def known_sections(raw: Mapping[str, Any], origin: str) -> None:
    """ConfigError naming the document's top-level sections that lockgate.toml does not have."""
    unknown = set(raw) - SECTIONS
    if unknown:
        raise ConfigError(f"{origin}: unknown section(s) {sorted(unknown)}")


def table(value: Any, where: str) -> Mapping[str, Any]:
    """``value`` if it is a TOML table, else ConfigError naming ``where``."""
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where} must be a table")
    return value


def no_unknown(body: Mapping[str, Any], allowed: set[str], where: str) -> None:
    """ConfigError listing the keys of ``body`` that are not ``allowed``."""
    unknown = set(body) - allowed
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {sorted(unknown)}")


def positive_int(value: Any, where: str) -> int:
    """``value`` if it is a whole number above zero (not a bool), else ConfigError."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigError(f"{where} must be a positive whole number, got {value!r}")
    return value
