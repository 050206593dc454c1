"""Reading ``lockgate.toml``: each section parsed and validated into its config type.

Stdlib only on purpose: the webhook receiver loads this at cold start, and
pydantic would add ~25% to its import time (see benchmarks/cold_start.py).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lockgate.config.model import (
    PATTERNS,
    REVIEWER_ID,
    SCHEMES,
    SECRET_PREFIXES,
    SOURCE_NAME,
    ApprovalsConfig,
    BudgetConfig,
    CapacityConfig,
    InboxConfig,
    LockgateConfig,
    RateLimitConfig,
    Reviewer,
    ScheduleConfig,
    SourceConfig,
    ToolApproval,
)
from lockgate.config.slack import parse_slack, parse_slack_user, unique_slack_users
from lockgate.errors import ConfigError

# The template's Stage pattern: a stage names a file, so nothing else may reach the path.
STAGE_NAME = re.compile(r"[a-z][a-z0-9-]{0,15}")
_SOURCE_KEYS = {f for f in SourceConfig.__dataclass_fields__ if f != "name"}
_INBOX_KEYS = set(InboxConfig.__dataclass_fields__)


def load_config(path: str | Path, stage: str | None = None) -> LockgateConfig:
    """Read and validate a ``lockgate.toml``, with ``stages/<stage>.toml`` beside it merged over it."""
    p = Path(path)
    raw, origin = _read(p), str(p)
    overlay = stage_overlay(p, stage) if stage else None
    if overlay is not None and overlay.is_file():
        raw, origin = merge_tables(raw, _read(overlay)), f"{p} + {overlay}"
    return parse_config(raw, origin=origin)


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


def parse_config(raw: Mapping[str, Any], origin: str = "lockgate.toml") -> LockgateConfig:
    """Validate an already-parsed TOML document."""
    unknown = set(raw) - {"sources", "inbox", "workflows", "approvals", "budget", "capacity", "schedules"}
    if unknown:
        raise ConfigError(f"{origin}: unknown section(s) {sorted(unknown)}")
    sources_raw = _table(raw.get("sources", {}), f"{origin}: [sources]")
    sources = {
        name: _source(name, _table(body, f"{origin}: [sources.{name}]"), origin)
        for name, body in sources_raw.items()
    }
    inbox_raw = _table(raw.get("inbox", {}), f"{origin}: [inbox]")
    _no_unknown(inbox_raw, _INBOX_KEYS, f"{origin}: [inbox]")
    inbox = InboxConfig(**{k: _positive_int(v, f"{origin}: inbox.{k}") for k, v in inbox_raw.items()})
    workflows = _table(raw.get("workflows", {}), f"{origin}: [workflows]")
    _no_unknown(workflows, {"package"}, f"{origin}: [workflows]")
    package = workflows.get("package")
    if package is not None and not (isinstance(package, str) and package.isidentifier()):
        raise ConfigError(f"{origin}: workflows.package must be a Python package name")
    approvals = _approvals(_table(raw.get("approvals", {}), f"{origin}: [approvals]"), origin)
    budget = _budget(_table(raw.get("budget", {}), f"{origin}: [budget]"), origin)
    capacity = _capacity(_table(raw.get("capacity", {}), f"{origin}: [capacity]"), origin)
    schedules = _schedules(_table(raw.get("schedules", {}), f"{origin}: [schedules]"), origin)
    return LockgateConfig(
        sources=sources,
        inbox=inbox,
        workflows_package=package,
        approvals=approvals,
        budget=budget,
        schedules=schedules,
        capacity=capacity,
    )


def _capacity(body: Mapping[str, Any], origin: str) -> CapacityConfig:
    where = f"{origin}: [capacity]"
    _no_unknown(body, set(CapacityConfig.__dataclass_fields__), where)
    limits = {
        kind: {
            name: _rate_limit(_table(entry, f"{where} {kind}.{name}"), f"{where} {kind}.{name}")
            for name, entry in _table(body.get(kind, {}), f"{where} {kind}").items()
        }
        for kind in ("models", "sources")
    }
    ratio = body.get("retry_budget_ratio", 0.2)
    if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not 0 <= ratio <= 1:
        raise ConfigError(f"{where} retry_budget_ratio must be a number from 0 to 1, got {ratio!r}")
    count_tokens = body.get("count_tokens", False)
    if not isinstance(count_tokens, bool):
        raise ConfigError(f"{where} count_tokens must be true or false, got {count_tokens!r}")
    fallback = _positive_int(
        body.get("fallback_requests_per_minute", 5), f"{where} fallback_requests_per_minute"
    )
    ahead = _positive_int(body.get("calls_per_admission", 5), f"{where} calls_per_admission")
    return CapacityConfig(
        models=limits["models"],
        sources=limits["sources"],
        fallback_requests_per_minute=fallback,
        retry_budget_ratio=float(ratio),
        count_tokens=count_tokens,
        calls_per_admission=ahead,
    )


def _rate_limit(entry: Mapping[str, Any], where: str) -> RateLimitConfig:
    _no_unknown(entry, {"requests_per_minute", "tokens_per_minute"}, where)
    if "requests_per_minute" not in entry:
        raise ConfigError(f"{where}: requests_per_minute is required (tokens_per_minute is optional)")
    tokens = entry.get("tokens_per_minute")
    return RateLimitConfig(
        requests_per_minute=_positive_int(entry["requests_per_minute"], f"{where}.requests_per_minute"),
        tokens_per_minute=None if tokens is None else _positive_int(tokens, f"{where}.tokens_per_minute"),
    )


def _schedules(body: Mapping[str, Any], origin: str) -> dict[str, ScheduleConfig]:
    schedules = {}
    for name, raw in body.items():
        where = f"{origin}: [schedules.{name}]"
        entry = _table(raw, where)
        _no_unknown(entry, set(ScheduleConfig.__dataclass_fields__), where)
        expression, catch_up = entry.get("expression"), entry.get("catch_up", "each")
        if not isinstance(expression, str) or not expression.startswith(("rate(", "cron(")):
            raise ConfigError(f"{where}: expression must be a rate(...) or cron(...) expression")
        if catch_up not in ("each", "once"):
            raise ConfigError(f'{where}: catch_up must be "each" or "once"')
        if not all(c.isalnum() or c == "-" for c in name):
            raise ConfigError(f"{where}: a schedule name is letters, digits and '-'")
        schedules[name] = ScheduleConfig(expression, catch_up, str(entry.get("description", "")))
    return schedules


def _budget(body: Mapping[str, Any], origin: str) -> BudgetConfig:
    where = f"{origin}: [budget]"
    _no_unknown(body, {"daily_usd", "tasks"}, where)
    daily = body.get("daily_usd")
    tasks = {
        name: _dollars(v, f"{where} tasks.{name}") for name, v in _table(body.get("tasks", {}), where).items()
    }
    return BudgetConfig(
        daily_usd=None if daily is None else _dollars(daily, f"{where} daily_usd"), tasks=tasks
    )


def _dollars(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise ConfigError(f"{where} must be a positive number of dollars, got {value!r}")
    return float(value)


def _approvals(body: Mapping[str, Any], origin: str) -> ApprovalsConfig:
    where = f"{origin}: [approvals]"
    _no_unknown(
        body, {"reviewers", "tools", "max_pending_per_task", "max_pending_per_sender", "slack"}, where
    )
    reviewers = []
    for n, item in enumerate(body.get("reviewers", [])):
        entry = _table(item, f"{where} reviewers[{n}]")
        _no_unknown(entry, {"id", "name", "roles", "email", "slack_user"}, f"{where} reviewers[{n}]")
        rid = entry.get("id")
        if not isinstance(rid, str) or not REVIEWER_ID.match(rid):
            raise ConfigError(f"{where} reviewers[{n}]: id is letters, digits, '.', '_', '-', '@'")
        roles = entry.get("roles", [])
        if not isinstance(roles, list) or not all(isinstance(r, str) for r in roles):
            raise ConfigError(f"{where} reviewers[{n}]: roles is a list of names")
        slack_user = parse_slack_user(entry.get("slack_user"), f"{where} reviewers[{n}]")
        reviewers.append(
            Reviewer(rid, str(entry.get("name", rid)), tuple(roles), entry.get("email"), slack_user)
        )
    if len({r.id for r in reviewers}) != len(reviewers):
        raise ConfigError(f"{where}: reviewer ids must be unique")
    unique_slack_users(reviewers, where)
    tools = {}
    for name, item in _table(body.get("tools", {}), f"{where} tools").items():
        entry = _table(item, f"{where} tools.{name}")
        _no_unknown(entry, set(ToolApproval.__dataclass_fields__), f"{where} tools.{name}")
        numbers = {
            k: _positive_int(v, f"{where} tools.{name}.{k}")
            for k, v in entry.items()
            if k not in ("roles", "pattern")
        }
        pattern = entry.get("pattern", "queue")
        if pattern not in PATTERNS:
            raise ConfigError(f"{where} tools.{name}: pattern is one of {', '.join(PATTERNS)}")
        if numbers.get("reviewers_required", 1) > 2:
            raise ConfigError(f"{where} tools.{name}: reviewers_required is 1 or 2")
        tools[name] = ToolApproval(roles=tuple(entry.get("roles", ())), pattern=pattern, **numbers)
    cap = _positive_int(body.get("max_pending_per_task", 20), f"{where} max_pending_per_task")
    slack = parse_slack(body.get("slack"), f"{where} slack")
    per_sender = _positive_int(body.get("max_pending_per_sender", 3), f"{where} max_pending_per_sender")
    if per_sender > cap:
        raise ConfigError(
            f"{where} max_pending_per_sender ({per_sender}) is above max_pending_per_task ({cap})"
        )
    return ApprovalsConfig(
        reviewers=tuple(reviewers),
        tools=tools,
        max_pending_per_task=cap,
        max_pending_per_sender=per_sender,
        slack=slack,
    )


def _source(name: str, body: Mapping[str, Any], origin: str) -> SourceConfig:
    where = f"{origin}: [sources.{name}]"
    if not SOURCE_NAME.match(name):
        raise ConfigError(f"{where}: source names are lowercase letters, digits, '-' and '_'")
    _no_unknown(body, _SOURCE_KEYS, where)
    scheme = body.get("scheme")
    if scheme not in SCHEMES:
        raise ConfigError(f"{where}: scheme must be one of {sorted(SCHEMES)}, got {scheme!r}")
    secrets = body.get("secrets")
    if not isinstance(secrets, list) or not secrets:
        raise ConfigError(f'{where}: secrets must be a non-empty list, e.g. ["env:NAME"]')
    for ref in secrets:
        if not isinstance(ref, str) or not ref.startswith(SECRET_PREFIXES) or ref.endswith(":"):
            raise ConfigError(f'{where}: each secret is "env:NAME" or "secretsmanager:NAME"')
    options: dict[str, Any] = {}
    for key in ("tolerance_seconds", "max_body_bytes"):
        if key in body:
            options[key] = _positive_int(body[key], f"{where} {key}")
    for key in (
        "header",
        "encoding",
        "prefix",
        "algorithm",
        "id_header",
        "id_field",
        "event_type_header",
        "event_type_field",
    ):
        if key in body:
            if not isinstance(body[key], str):
                raise ConfigError(f"{where}: {key} must be a string")
            options[key] = body[key]
    if scheme == "hmac":
        if not options.get("header"):
            raise ConfigError(f'{where}: the hmac scheme needs header = "X-Signature-Header"')
        if options.get("encoding", "hex") not in ("hex", "base64"):
            raise ConfigError(f'{where}: encoding must be "hex" or "base64"')
        if options.get("algorithm", "sha256") not in ("sha1", "sha256", "sha512"):
            raise ConfigError(f"{where}: algorithm must be sha1, sha256 or sha512")
    return SourceConfig(name=name, scheme=scheme, secrets=tuple(secrets), **options)


def _table(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where} must be a table")
    return value


def _no_unknown(body: Mapping[str, Any], allowed: set[str], where: str) -> None:
    unknown = set(body) - allowed
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {sorted(unknown)}")


def _positive_int(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigError(f"{where} must be a positive whole number, got {value!r}")
    return value
