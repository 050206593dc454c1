"""Reading the whole ``lockgate.toml``: each section parsed and validated into its config type.

The receiver's sections (``[sources]``, ``[inbox]``) are parsed in ``lockgate.config.sources``,
the file read in ``lockgate.config.files``; stdlib only, as the receiver loads both at cold start.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lockgate.config.approval_parsing import parse_approvals
from lockgate.config.files import known_sections, no_unknown, positive_int, read_config, table
from lockgate.config.mcp import parse_mcp
from lockgate.config.model import (
    BudgetConfig,
    CapacityConfig,
    LockgateConfig,
    RateLimitConfig,
    ScheduleConfig,
    WorkflowsConfig,
)
from lockgate.config.prices import parse_models
from lockgate.config.provider import parse_provider
from lockgate.config.sources import parse_inbox, parse_sources
from lockgate.errors import ConfigError


def load_config(path: str | Path, stage: str | None = None) -> LockgateConfig:
    """Read and validate a ``lockgate.toml``, with ``stages/<stage>.toml`` beside it merged over it."""
    raw, origin = read_config(path, stage)
    return parse_config(raw, origin=origin)


def parse_config(raw: Mapping[str, Any], origin: str = "lockgate.toml") -> LockgateConfig:
    """Validate an already-parsed TOML document."""
    known_sections(raw, origin)
    sources, inbox = parse_sources(raw, origin), parse_inbox(raw, origin)
    workflows = _workflows(table(raw.get("workflows", {}), f"{origin}: [workflows]"), origin)
    approvals = parse_approvals(table(raw.get("approvals", {}), f"{origin}: [approvals]"), origin)
    budget = _budget(table(raw.get("budget", {}), f"{origin}: [budget]"), origin)
    capacity = _capacity(table(raw.get("capacity", {}), f"{origin}: [capacity]"), origin)
    schedules = _schedules(table(raw.get("schedules", {}), f"{origin}: [schedules]"), origin)
    models = parse_models(table(raw.get("models", {}), f"{origin}: [models]"), origin)
    provider = parse_provider(table(raw.get("provider", {}), f"{origin}: [provider]"), origin)
    mcp = parse_mcp(table(raw.get("mcp", {}), f"{origin}: [mcp]"), origin)
    return LockgateConfig(
        sources=sources,
        inbox=inbox,
        workflows=workflows,
        approvals=approvals,
        budget=budget,
        schedules=schedules,
        capacity=capacity,
        models=models,
        provider=provider,
        mcp=mcp,
    )


def _workflows(body: Mapping[str, Any], origin: str) -> WorkflowsConfig:
    where = f"{origin}: [workflows]"
    no_unknown(body, {"packages", "package"}, where)
    if "package" in body and "packages" in body:
        raise ConfigError(f'{where} has both package and packages: keep packages = ["name", ...] only')
    # `package = "name"`, the one-package spelling of earlier releases, still means that one package.
    packages = [body["package"]] if "package" in body else body.get("packages", [])
    if not isinstance(packages, list) or not all(isinstance(p, str) and p.isidentifier() for p in packages):
        raise ConfigError(f'{where} packages must be a list of Python package names, e.g. ["shop"]')
    repeated = sorted({p for p in packages if packages.count(p) > 1})
    if repeated:
        raise ConfigError(f"{where} lists {', '.join(repeated)} more than once")
    return WorkflowsConfig(packages=tuple(packages))


def _capacity(body: Mapping[str, Any], origin: str) -> CapacityConfig:
    where = f"{origin}: [capacity]"
    no_unknown(body, set(CapacityConfig.__dataclass_fields__), where)
    limits = {
        kind: {
            name: _rate_limit(table(entry, f"{where} {kind}.{name}"), f"{where} {kind}.{name}")
            for name, entry in table(body.get(kind, {}), f"{where} {kind}").items()
        }
        for kind in ("models", "sources")
    }
    ratio = body.get("retry_budget_ratio", 0.2)
    if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not 0 <= ratio <= 1:
        raise ConfigError(f"{where} retry_budget_ratio must be a number from 0 to 1, got {ratio!r}")
    count_tokens = body.get("count_tokens", False)
    if not isinstance(count_tokens, bool):
        raise ConfigError(f"{where} count_tokens must be true or false, got {count_tokens!r}")
    fallback = positive_int(
        body.get("fallback_requests_per_minute", 5), f"{where} fallback_requests_per_minute"
    )
    ahead = positive_int(body.get("calls_per_admission", 5), f"{where} calls_per_admission")
    shards = positive_int(body.get("shards", CapacityConfig.shards), f"{where} shards")
    return CapacityConfig(
        models=limits["models"],
        sources=limits["sources"],
        fallback_requests_per_minute=fallback,
        retry_budget_ratio=float(ratio),
        count_tokens=count_tokens,
        calls_per_admission=ahead,
        shards=shards,
    )


def _rate_limit(entry: Mapping[str, Any], where: str) -> RateLimitConfig:
    no_unknown(entry, {"requests_per_minute", "tokens_per_minute"}, where)
    if "requests_per_minute" not in entry:
        raise ConfigError(f"{where}: requests_per_minute is required (tokens_per_minute is optional)")
    tokens = entry.get("tokens_per_minute")
    return RateLimitConfig(
        requests_per_minute=positive_int(entry["requests_per_minute"], f"{where}.requests_per_minute"),
        tokens_per_minute=None if tokens is None else positive_int(tokens, f"{where}.tokens_per_minute"),
    )


def _schedules(body: Mapping[str, Any], origin: str) -> dict[str, ScheduleConfig]:
    schedules = {}
    for name, raw in body.items():
        where = f"{origin}: [schedules.{name}]"
        entry = table(raw, where)
        no_unknown(entry, set(ScheduleConfig.__dataclass_fields__), where)
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
    no_unknown(body, {"daily_usd", "tasks"}, where)
    daily = body.get("daily_usd")
    tasks = {
        name: _dollars(v, f"{where} tasks.{name}") for name, v in table(body.get("tasks", {}), where).items()
    }
    return BudgetConfig(
        daily_usd=None if daily is None else _dollars(daily, f"{where} daily_usd"), tasks=tasks
    )


def _dollars(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise ConfigError(f"{where} must be a positive number of dollars, got {value!r}")
    return float(value)
