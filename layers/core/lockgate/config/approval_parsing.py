"""Reading ``[approvals]``: reviewers, each tool's section with its rules and escalation, Slack."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from lockgate.config.files import no_unknown, positive_int, table
from lockgate.config.model import PATTERNS, REVIEWER_ID, ApprovalsConfig, Reviewer, ToolApproval
from lockgate.config.rules import (
    MAX_REVIEWERS,
    OPERATORS,
    ApprovalRule,
    Threshold,
    ThresholdRule,
    plain_number,
)
from lockgate.config.slack import parse_slack, parse_slack_user, unique_slack_users
from lockgate.errors import ConfigError

# [[approvals.tools.NAME.rules]]: each key, its type, default and meaning (the config reference lists them).
RULE_KEYS: dict[str, tuple[str, str, str]] = {
    "argument": ("str", "required", "one of the tool's number arguments, compared as written in the call"),
    "over": ("number", "-", "the rule applies when the argument is more than this"),
    "at_least": ("number", "-", "... at least this"),
    "under": ("number", "-", "... less than this"),
    "at_most": ("number", "-", "... at most this (give exactly one of the four)"),
    "reviewers_required": (
        "int",
        "`1`",
        "at least this many distinct reviewers (1 to 5); the largest applied wins",
    ),
    "roles": ("list of strings", "`[]`", "only reviewers with one of these roles; narrows, never widens"),
    "refuse": ("bool", "`false`", "refuse the call outright: the model is told why, nothing is proposed"),
    "name": ("str", '"ARGUMENT over N"', "what every screen calls the rule"),
    "why": ("str", "the name", "why, in words for reviewers and the model"),
}
_RULE_KEYS = set(RULE_KEYS)
_TOOL_NUMBERS = ("reviewers_required", "decide_within_hours", "run_within_hours", "veto_minutes")


def parse_approvals(body: Mapping[str, Any], origin: str) -> ApprovalsConfig:
    """``[approvals]``, validated; ConfigError names the key and what it should be."""
    where = f"{origin}: [approvals]"
    no_unknown(body, {"reviewers", "tools", "max_pending_per_task", "max_pending_per_sender", "slack"}, where)
    reviewers = [
        _reviewer(item, f"{where} reviewers[{n}]") for n, item in enumerate(body.get("reviewers", []))
    ]
    if len({r.id for r in reviewers}) != len(reviewers):
        raise ConfigError(f"{where}: reviewer ids must be unique")
    unique_slack_users(reviewers, where)
    tools = {
        name: tool_approval(table(item, f"{where} tools.{name}"), f"{where} tools.{name}")
        for name, item in table(body.get("tools", {}), f"{where} tools").items()
    }
    cap = positive_int(body.get("max_pending_per_task", 20), f"{where} max_pending_per_task")
    slack = parse_slack(body.get("slack"), f"{where} slack")
    per_sender = positive_int(body.get("max_pending_per_sender", 3), f"{where} max_pending_per_sender")
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


def _reviewer(item: Any, where: str) -> Reviewer:
    entry = table(item, where)
    no_unknown(entry, {"id", "name", "roles", "email", "slack_user"}, where)
    rid = entry.get("id")
    if not isinstance(rid, str) or not REVIEWER_ID.match(rid):
        raise ConfigError(f"{where}: id is letters, digits, '.', '_', '-', '@'")
    roles = _names(entry.get("roles", []), f"{where}: roles")
    slack_user = parse_slack_user(entry.get("slack_user"), where)
    return Reviewer(rid, str(entry.get("name", rid)), roles, entry.get("email"), slack_user)


def tool_approval(entry: Mapping[str, Any], where: str) -> ToolApproval:
    """One ``[approvals.tools.NAME]`` section."""
    no_unknown(entry, set(ToolApproval.__dataclass_fields__), where)
    numbers = {k: positive_int(entry[k], f"{where}.{k}") for k in _TOOL_NUMBERS if k in entry}
    pattern = entry.get("pattern", "queue")
    if pattern not in PATTERNS:
        raise ConfigError(f"{where}: pattern is one of {', '.join(PATTERNS)}")
    if numbers.get("reviewers_required", 1) > MAX_REVIEWERS:
        raise ConfigError(f"{where}: reviewers_required is 1 to {MAX_REVIEWERS}")
    rules = entry.get("rules", [])
    if not isinstance(rules, list):
        raise ConfigError(f"{where}.rules is a list of tables: [[approvals.tools.NAME.rules]]")
    escalate = entry.get("escalate_after_minutes")
    escalate_roles = _names(entry.get("escalate_roles", []), f"{where}.escalate_roles")
    if (escalate is None) != (not escalate_roles):
        raise ConfigError(
            f"{where}: escalate_after_minutes and escalate_roles go together (after how long, to whom)"
        )
    return ToolApproval(
        roles=_names(entry.get("roles", []), f"{where}.roles"),
        pattern=pattern,
        rules=tuple(
            _rule(table(r, f"{where}.rules[{n}]"), f"{where}.rules[{n}]") for n, r in enumerate(rules)
        ),
        escalate_after_minutes=None
        if escalate is None
        else positive_int(escalate, f"{where}.escalate_after_minutes"),
        escalate_roles=escalate_roles,
        **numbers,
    )


def _rule(entry: Mapping[str, Any], where: str) -> ThresholdRule:
    """One ``[[approvals.tools.NAME.rules]]`` table: a threshold and what it asks for."""
    no_unknown(entry, _RULE_KEYS, where)
    argument = entry.get("argument")
    if not isinstance(argument, str) or not argument.isidentifier():
        raise ConfigError(f"{where}: argument is the name of one of the tool's number arguments, e.g. amount")
    operators = [op for op in OPERATORS if op in entry]
    if len(operators) != 1:
        raise ConfigError(f"{where}: give exactly one of {', '.join(OPERATORS)} (e.g. over = 100)")
    op = operators[0]
    value = _threshold(entry[op], f"{where}.{op}")
    refuse = entry.get("refuse", False)
    if not isinstance(refuse, bool):
        raise ConfigError(f"{where}.refuse is true or false")
    if not refuse and "reviewers_required" not in entry and "roles" not in entry:
        raise ConfigError(f"{where}: say what it asks for: reviewers_required, roles, or refuse = true")
    reviewers = positive_int(entry.get("reviewers_required", 1), f"{where}.reviewers_required")
    if reviewers > MAX_REVIEWERS:
        raise ConfigError(f"{where}.reviewers_required is 1 to {MAX_REVIEWERS}")
    threshold = Threshold(argument, op, value)
    name = entry.get("name", threshold.describe())
    why = entry.get("why", "")
    if not isinstance(why, str):
        raise ConfigError(f"{where}.why is text")
    try:
        rule = ApprovalRule(
            name=name,
            reviewers_required=reviewers,
            roles=_names(entry.get("roles", []), f"{where}.roles"),
            refuse=refuse,
            why=why,
        )
    except ValueError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    return ThresholdRule(threshold, rule)


def _threshold(value: Any, where: str) -> Decimal:
    number = plain_number(value)
    if number is None:
        raise ConfigError(f'{where} is a number (e.g. 100 or "100.00"), got {value!r}')
    return number


def _names(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(r, str) and r for r in value):
        raise ConfigError(f"{where} is a list of names")
    return tuple(value)
