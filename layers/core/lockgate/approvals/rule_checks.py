"""``[approvals]`` read against the tasks' tools: mistakes that would make a rule silently wrong.

Each finding names the setting and says what to change: a rule on an argument the tool does not
have (or one that is not a number), a role no reviewer holds, more reviewers than hold a role, an
escalation that could only come after the request expired. The worker refuses to start on the
first (``require_valid_rules``); ``lockgate check`` prints them all.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from lockgate.actions.editable import editable_fields
from lockgate.actions.tools import Tool
from lockgate.agent.tasks import Task
from lockgate.approvals.proposals import RESOLVE_TOOL
from lockgate.config import ApprovalsConfig, ToolApproval
from lockgate.config.rules import Requirement
from lockgate.errors import ConfigError

_NUMBERS = ("number", "integer")


def require_valid_rules(config: ApprovalsConfig, tasks: Sequence[Task]) -> None:
    """ConfigError with the first finding, so a deployment never runs on a rule that cannot hold."""
    for finding in rule_findings(config, tasks):
        raise ConfigError(finding)


def rule_findings(config: ApprovalsConfig, tasks: Sequence[Task]) -> list[str]:
    """Every finding, one line each."""
    tools: dict[str, Tool[Any]] = {t.name: t for task in tasks for t in task.tools}
    findings: list[str] = []
    for name, section in config.tools.items():
        where = f"lockgate.toml [approvals.tools.{name}]"
        tool = tools.get(name)
        if tool is None and name != RESOLVE_TOOL and (section.rules or section.escalate_roles):
            findings.append(
                f"{where}: no task offers a tool called {name!r}: check the name ({_names(tools)})"
            )
        if tool is not None:
            findings += list(_arguments(where, section, tool))
        findings += list(_roles(where, section, config))
        if section.escalate_after_minutes is not None and section.escalate_after_minutes >= (
            section.decide_within_hours * 60
        ):
            findings.append(
                f"{where}: escalate_after_minutes ({section.escalate_after_minutes}) is not before the "
                f"request expires (decide_within_hours = {section.decide_within_hours}): make it shorter"
            )
    return findings


def _arguments(where: str, section: ToolApproval, tool: Tool[Any]) -> Iterator[str]:
    properties = tool.args.model_json_schema().get("properties", {})
    for n, rule in enumerate(section.rules):
        argument = rule.when.argument
        field = properties.get(argument)
        numbers = sorted(k for k, v in properties.items() if _is_number(k, v))
        if field is None or not _is_number(argument, field):
            yield (
                f"{where} rules[{n}]: argument {argument!r} is not one of {tool.name}'s number arguments "
                f"({', '.join(numbers) or 'it has none'}): a threshold compares a number"
            )


def _is_number(name: str, field: Any) -> bool:
    try:
        kept = editable_fields({"properties": {name: field}}, (name,))
    except ValueError:
        return False
    return kept[name].get("type") in _NUMBERS


def _roles(where: str, section: ToolApproval, config: ApprovalsConfig) -> Iterator[str]:
    held = {role for reviewer in config.reviewers for role in reviewer.roles}
    named = [("roles", section.roles), ("escalate_roles", section.escalate_roles)]
    named += [(f"rules[{n}].roles", r.rule.roles) for n, r in enumerate(section.rules)]
    for setting, roles in named:
        for role in roles:
            if config.reviewers and role not in held:
                yield f"{where} {setting}: no reviewer has the role {role!r} ([[approvals.reviewers]] roles)"
    base = Requirement(section.reviewers_required, section.roles)
    for n, threshold in enumerate([None, *section.rules]):
        need = base if threshold is None else base.with_rule(threshold.rule)
        if need.refused and threshold is not None and not threshold.rule.refuse:
            yield f"{where} rules[{n - 1}]: {need.refused}: give it roles that the tool's roles include"
        if need.refused or not config.reviewers:
            continue
        able = config.reviewers_with(need.roles)
        if not able and not held & set(need.roles):
            continue  # a role nobody holds: said above, once
        if len(able) < need.reviewers_required:
            setting = "reviewers_required" if threshold is None else f"rules[{n - 1}]"
            yield (
                f"{where} {setting}: needs {need.who()}, and only {len(able)} reviewer(s) "
                f"({', '.join(r.id for r in able) or 'none'}) can: add reviewers or lower the count"
            )


def _names(tools: dict[str, Tool[Any]]) -> str:
    return "tools offered: " + (", ".join(sorted(tools)) or "none")
