"""What one exact call needs from people: ``lockgate.toml``'s approval rules, then the tool's own hook."""

from __future__ import annotations

from typing import Any

from lockgate.actions.facts import RunFacts
from lockgate.actions.tools import Tool
from lockgate.config.model import ApprovalsConfig
from lockgate.config.rules import ApprovalRule, Requirement
from lockgate.errors import ConfigError

DEFAULT_APPROVALS = ApprovalsConfig()


def requirement_for(
    tool: Tool[Any], args: Any, facts: RunFacts, approvals: ApprovalsConfig | None = None
) -> Requirement:
    """The tool's section in ``[approvals.tools]`` and its threshold rules on the canonical arguments,
    then ``Tool.approval_rules``: who must approve this exact call, or why it is refused."""
    section = (approvals or DEFAULT_APPROVALS).for_tool(tool.name)
    base = section.requirement(args.model_dump(mode="json"), high_stakes=tool.high_stakes)
    return base.with_rules(hook_rules(tool, args, facts))


def hook_rules(tool: Tool[Any], args: Any, facts: RunFacts) -> tuple[ApprovalRule, ...]:
    """What ``Tool.approval_rules`` says applies to this call (none without a hook)."""
    if tool.approval_rules is None:
        return ()
    found = tool.approval_rules(args, facts)
    if found is None:
        return ()
    rules = (found,) if isinstance(found, ApprovalRule) else tuple(found)
    if not all(isinstance(rule, ApprovalRule) for rule in rules):
        raise ConfigError(
            f"tool {tool.name}: approval_rules returned {found!r:.80}; return an ApprovalRule, a list of "
            "them, or None"
        )
    return rules
