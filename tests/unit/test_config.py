"""lockgate.toml parsing: the documented shape works, mistakes are named."""

from __future__ import annotations

from pathlib import Path

import pytest

from lockgate.config import RateLimitConfig, load_config, parse_config
from lockgate.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]


def test_the_documented_shape_works(tmp_path: Path) -> None:
    # Given the exact snippet from the README
    path = tmp_path / "lockgate.toml"
    path.write_text(
        "[sources.github]\n"
        'scheme = "github"        # github | stripe | standard | slack | shopify | hmac\n'
        'secrets = ["env:GITHUB_WEBHOOK_SECRET"]   # several allowed, for rotation\n'
        "tolerance_seconds = 300  # for timestamped schemes\n"
    )
    config = load_config(path)
    source = config.sources["github"]
    assert (source.scheme, source.secrets, source.tolerance_seconds) == (
        "github",
        ("env:GITHUB_WEBHOOK_SECRET",),
        300,
    )
    assert source.max_body_bytes == 1_048_576
    assert config.inbox.max_attempts == 5


def test_the_shipped_config_is_valid() -> None:
    config = load_config(ROOT / "lockgate.toml")
    assert {"helpdesk", "github", "stripe", "slack", "shopify", "partner"} <= set(config.sources)
    assert config.workflows.packages == ("shop", "triage", "tickets")


@pytest.mark.parametrize(
    ("workflows", "packages"),
    [
        ({"packages": ["shop", "triage"]}, ("shop", "triage")),  # registered in this order
        ({"packages": []}, ()),
        ({"package": "shop"}, ("shop",)),  # the one-package spelling of earlier releases
        ({}, ()),
    ],
)
def test_given_workflows_packages_then_they_are_kept_in_order(workflows: dict, packages: tuple) -> None:
    assert parse_config({"workflows": workflows}).workflows.packages == packages


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"sources": {"x": {"scheme": "gitlab", "secrets": ["env:A"]}}}, "scheme must be one of"),
        ({"sources": {"x": {"scheme": "github", "secrets": []}}}, "non-empty list"),
        ({"sources": {"x": {"scheme": "github"}}}, "non-empty list"),
        ({"sources": {"x": {"scheme": "github", "secrets": ["plain-secret"]}}}, "env:NAME"),
        ({"sources": {"x": {"scheme": "github", "secrets": ["env:"]}}}, "env:NAME"),
        ({"sources": {"x": {"scheme": "github", "secrets": ["env:A"], "tolerance": 5}}}, "unknown key"),
        ({"sources": {"x": {"scheme": "stripe", "secrets": ["env:A"], "tolerance_seconds": -1}}}, "positive"),
        ({"sources": {"x": {"scheme": "hmac", "secrets": ["env:A"]}}}, "needs header"),
        (
            {"sources": {"x": {"scheme": "hmac", "secrets": ["env:A"], "header": "h", "encoding": "b32"}}},
            "encoding",
        ),
        ({"sources": {"Bad Name": {"scheme": "github", "secrets": ["env:A"]}}}, "source names"),
        ({"source": {}}, "unknown section"),
        ({"inbox": {"max_attempts": 0}}, "positive"),
        ({"workflows": {"package": "not a name"}}, "package names"),
        (
            {"workflows": {"packages": "shop"}},
            r'packages must be a list of Python package names, e.g. \["shop"\]',
        ),
        ({"workflows": {"packages": ["shop", "shop"]}}, r"\[workflows\] lists shop more than once"),
        (
            {"workflows": {"package": "shop", "packages": ["shop"]}},
            r'has both package and packages: keep packages = \["name", ...\] only',
        ),
        ({"workflows": {"modules": ["shop"]}}, "unknown key"),
        ({"approvals": {"max_pending_per_sender": 0}}, "max_pending_per_sender"),
        (
            {"approvals": {"max_pending_per_task": 2, "max_pending_per_sender": 3}},
            "above max_pending_per_task",
        ),
    ],
)
def test_mistakes_are_refused_with_a_clear_message(raw: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_config(raw)


def test_missing_or_broken_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "nope.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[sources.github\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(bad)


def test_approval_rules_parse_and_mistakes_are_named() -> None:
    config = parse_config(
        {
            "approvals": {
                "reviewers": [{"id": "alice", "roles": ["refunds"]}, {"id": "bob"}],
                "tools": {"refund_order": {"roles": ["refunds"], "pattern": "veto", "veto_minutes": 15}},
            }
        }
    )
    rule = config.approvals.for_tool("refund_order")
    assert (rule.pattern, rule.veto_minutes, rule.decide_within_hours) == ("veto", 15, 24)
    assert [r.id for r in config.approvals.reviewers_for("refund_order")] == ["alice"]
    assert [r.id for r in config.approvals.reviewers_for("send_email")] == ["alice", "bob"]
    for bad, message in [
        ({"tools": {"x": {"pattern": "sometimes"}}}, "pattern is one of"),
        ({"tools": {"x": {"reviewers_required": 6}}}, "1 to 5"),
        ({"reviewers": [{"id": "a b"}]}, "id is letters"),
        ({"reviewers": [{"id": "a"}, {"id": "a"}]}, "unique"),
        ({"tools": {"x": {"role": ["a"]}}}, "unknown key"),
    ]:
        with pytest.raises(ConfigError, match=message):
            parse_config({"approvals": bad})


def test_budget_caps_parse_and_must_be_positive_dollars() -> None:
    config = parse_config({"budget": {"daily_usd": 20, "tasks": {"support-inbox": 7.5}}})
    assert (config.budget.daily_usd, dict(config.budget.tasks)) == (20.0, {"support-inbox": 7.5})
    assert parse_config({}).budget.daily_usd is None
    for bad in ({"daily_usd": 0}, {"daily_usd": "20"}, {"tasks": {"x": -1}}, {"monthly_usd": 5}):
        with pytest.raises(ConfigError):
            parse_config({"budget": bad})


# ------------------------------------------------------------------ deploy parameters in the environment

_WORKER_ENV = {
    "INBOX_TABLE": "i", "STATE_TABLE": "s", "INBOX_QUEUE_URL": "q", "INBOX_DLQ_URL": "d", "BODY_BUCKET": "b",
}  # fmt: skip


def test_given_the_daily_budget_parameter_then_it_replaces_the_files_daily_cap_and_keeps_task_caps():
    from lockgate.config import BudgetConfig
    from lockgate.settings import WorkerSettings

    configured = BudgetConfig(daily_usd=20.0, tasks={"support-inbox": 10.0})
    deployed = WorkerSettings.from_env({**_WORKER_ENV, "LOCKGATE_DAILY_BUDGET_USD": "7.5"})
    assert deployed.budget(configured) == BudgetConfig(daily_usd=7.5, tasks={"support-inbox": 10.0})
    # Empty (the template's default) keeps lockgate.toml's cap.
    unset = WorkerSettings.from_env({**_WORKER_ENV, "LOCKGATE_DAILY_BUDGET_USD": ""})
    assert unset.budget(configured) is configured


@pytest.mark.parametrize("raw", ["-1", "abc", "nan", "1e"])
def test_given_a_malformed_daily_budget_then_the_worker_refuses_to_start(raw):
    from lockgate.settings import WorkerSettings

    with pytest.raises(ConfigError, match="LOCKGATE_DAILY_BUDGET_USD"):
        WorkerSettings.from_env({**_WORKER_ENV, "LOCKGATE_DAILY_BUDGET_USD": raw})


def test_given_the_shop_model_parameter_then_the_support_task_uses_it():
    from shop.services import DEFAULT_MODEL, ShopSettings

    tables = {"SHOP_ORDERS_TABLE": "o", "SHOP_PAYMENTS_TABLE": "p", "SHOP_MAIL_TABLE": "m"}
    chosen = ShopSettings.from_env({**tables, "SHOP_MODEL": "claude-haiku-4-5"})
    assert chosen.model == "claude-haiku-4-5"
    assert ShopSettings.from_env(tables).model == DEFAULT_MODEL


def test_capacity_limits_parse_per_model_and_per_source() -> None:
    # Given a model limit with both rates and a source limit with requests only
    config = parse_config(
        {
            "capacity": {
                "models": {"claude-haiku-4-5": {"requests_per_minute": 50, "tokens_per_minute": 40_000}},
                "sources": {"helpdesk": {"requests_per_minute": 20}},
                "fallback_requests_per_minute": 3,
                "retry_budget_ratio": 0.1,
                "count_tokens": True,
            }
        }
    )
    # Then each limit is kept as written; an absent tokens limit is None (requests only)
    capacity = config.capacity
    assert capacity.models["claude-haiku-4-5"] == RateLimitConfig(50, 40_000)
    assert capacity.sources["helpdesk"] == RateLimitConfig(20, None)
    assert (capacity.fallback_requests_per_minute, capacity.retry_budget_ratio, capacity.count_tokens) == (
        3,
        0.1,
        True,
    )
    # And no [capacity] section means no shared limits and the conservative defaults
    default = parse_config({}).capacity
    assert (dict(default.models), dict(default.sources), default.fallback_requests_per_minute) == ({}, {}, 5)
    assert default.calls_per_admission == 5


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (
            {"models": {"m": {"tokens_per_minute": 10}}},
            r"models.m: requests_per_minute is required",
        ),
        ({"models": {"m": {"requests_per_minute": 0}}}, r"models.m.requests_per_minute must be a positive"),
        (
            {"sources": {"s": {"requests_per_minute": 5, "tokens_per_minute": "many"}}},
            r"sources.s.tokens_per",
        ),
        ({"sources": {"s": {"rpm": 5}}}, r"sources.s: unknown key\(s\) \['rpm'\]"),
        ({"models": {"m": 50}}, r"models.m must be a table"),
        ({"retry_budget_ratio": 1.5}, r"retry_budget_ratio must be a number from 0 to 1"),
        ({"count_tokens": "yes"}, r"count_tokens must be true or false"),
        ({"fallback_requests_per_minute": -1}, r"fallback_requests_per_minute must be a positive"),
        ({"calls_per_admission": 0}, r"calls_per_admission must be a positive"),
        ({"limits": {}}, r"\[capacity\]: unknown key"),
    ],
)
def test_capacity_mistakes_are_refused_with_the_place_named(bad: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_config({"capacity": bad})


def test_the_pending_limits_default_to_twenty_per_task_and_three_per_sender() -> None:
    approvals = parse_config({}).approvals
    assert (approvals.max_pending_per_task, approvals.max_pending_per_sender) == (20, 3)
    shipped = load_config(ROOT / "lockgate.toml").approvals
    assert (shipped.max_pending_per_task, shipped.max_pending_per_sender) == (20, 3)
