"""The checks every tool call passes, in order: allowed → schema → policy → taint → approval.

Pure functions of the task, the call and the run's state, so they are tested table-style.
The ledger and execution come after a call is cleared.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from lockgate.actions.tools import Risk, RunFacts, Tool, ToolArgumentsInvalid
from lockgate.agent.tasks import Task


class Check(StrEnum):
    """Which check decided."""

    ALLOWED = "allowed"
    SCHEMA = "schema"
    POLICY = "policy"
    TAINT = "taint"
    APPROVAL = "approval"
    CLEARED = "cleared"


@dataclass
class RunState:
    """What the guard knows about the run so far."""

    facts: RunFacts
    taint_sources: list[str] = field(default_factory=list)  # e.g. "read_email: an email from x@y"
    suspicious: list[str] = field(default_factory=list)  # positive injection screens

    @property
    def tainted(self) -> bool:
        """Whether the run has read untrusted content."""
        return bool(self.taint_sources)


@dataclass(frozen=True)
class Decision:
    """The guard's answer for one call."""

    check: Check
    reason: str = ""
    tool: Tool[Any] | None = None
    args: Any = None

    @property
    def cleared(self) -> bool:
        """May go on to the ledger."""
        return self.check is Check.CLEARED

    @property
    def needs_person(self) -> bool:
        """Blocked until a person approves (taint or approval)."""
        return self.check in (Check.TAINT, Check.APPROVAL)


def decide(task: Task, name: str, raw_args: Any, state: RunState) -> Decision:
    """Run the checks in order; the first that objects decides."""
    tool = task.tool(name)
    if tool is None:
        offered = ", ".join(t.name for t in task.tools)
        return Decision(Check.ALLOWED, f"No tool called {name!r} is available. Available tools: {offered}.")
    try:
        args = tool.validate(raw_args)
    except ToolArgumentsInvalid as exc:
        return Decision(Check.SCHEMA, f"Invalid arguments for {tool.name}: {exc}", tool)
    for policy in tool.policies:
        verdict = policy(args, state.facts)
        if not verdict.allowed:
            return Decision(Check.POLICY, f"Refused by policy: {verdict.reason}", tool, args)
    if tool.risk is not Risk.READ:
        if state.suspicious:
            return Decision(
                Check.TAINT,
                "a screen flagged content in this run as a possible prompt "
                f"injection ({state.suspicious[0]})",
                tool,
                args,
            )
        if state.tainted and tool.needs_person_when_tainted:
            return Decision(Check.TAINT, f"this run read {state.taint_sources[0]}", tool, args)
        if tool.risk is Risk.APPROVAL:
            return Decision(Check.APPROVAL, f"{tool.name} always needs a person", tool, args)
        if tool.approval_threshold is not None:
            why = tool.approval_threshold(args, state.facts)
            if why:
                return Decision(Check.APPROVAL, why, tool, args)
    return Decision(Check.CLEARED, "", tool, args)
