"""The guard's ruling on one tool call, made here and nowhere else.

Checks in order: allowed for the task → argument schema → hard policy rules → approval rules that
refuse → taint (and policies that ask for a person) → approval thresholds and the approval rules
that apply → draft-only tools. The first that objects rules. Pure
functions of the task's tools, the call and the run's state, so they are tested table-style. The
ledger and execution come after an ``Allowed`` ruling; a ``NeedsPerson`` ruling becomes a proposal;
a ``Refused`` one goes back to the model as an error it can act on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from lockgate.actions.facts import RunFacts
from lockgate.actions.requirements import requirement_for
from lockgate.actions.tools import Risk, Tool, ToolArgumentsInvalid, Verdict
from lockgate.config.model import ApprovalsConfig
from lockgate.config.rules import Requirement


class Check(StrEnum):
    """Which check ruled (recorded on the run's step as ``check``)."""

    OFFERED = "offered"  # the task offers no tool by that name
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
    # (what was read, its text) not screened yet: nothing but a read is ruled on until it is
    unscreened: list[tuple[str, str]] = field(default_factory=list)

    @property
    def tainted(self) -> bool:
        """Whether the run has read untrusted content."""
        return bool(self.taint_sources)


@dataclass(frozen=True)
class Allowed:
    """Cleared: may go on to the ledger."""

    tool: Tool[Any]
    args: Any
    check: Check = field(default=Check.CLEARED, init=False)
    reason: str = field(default="", init=False)


@dataclass(frozen=True)
class NeedsPerson:
    """Blocked until a person approves: the run read untrusted content, or the action asks for it."""

    check: Check  # TAINT or APPROVAL
    reasons: tuple[str, ...]
    tool: Tool[Any]
    args: Any
    requirement: Requirement = field(default_factory=Requirement)  # who must approve, by which rule

    @property
    def reason(self) -> str:
        """Why, in one line (for the run's record and the model)."""
        return "; ".join(self.reasons)


@dataclass(frozen=True)
class Refused:
    """Not allowed: an unknown tool, invalid arguments or a hard policy rule."""

    check: Check  # OFFERED, SCHEMA or POLICY
    reason: str
    tool: Tool[Any] | None = None
    args: Any = None


Ruling = Allowed | NeedsPerson | Refused

# Whether a tool is configured as "draft": the assistant prepares the action, a person sends it.
DraftOnly = Callable[[str], bool]


def rule_on(  # noqa: PLR0913 - the call, the run, and the deployment's two approval settings
    tools: Sequence[Tool[Any]],
    name: str,
    raw_args: Any,
    state: RunState,
    draft_only: DraftOnly | None = None,
    approvals: ApprovalsConfig | None = None,
) -> Ruling:
    """Run the checks in order on a call to ``name`` among the task's ``tools``; the first objection rules.

    ``approvals``: the deployment's ``[approvals]``, whose rules may refuse a call or ask for a person
    (None: only the tools' own ``approval_rules`` hooks).
    """
    tool = next((t for t in tools if t.name == name), None)
    if tool is None:
        offered = ", ".join(t.name for t in tools)
        return Refused(Check.OFFERED, f"No tool called {name!r} is available. Available tools: {offered}.")
    try:
        args = tool.validate(raw_args)
    except ToolArgumentsInvalid as exc:
        return Refused(Check.SCHEMA, f"Invalid arguments for {tool.name}: {exc}", tool)
    refusal, asks = policy_ruling(tool, args, state.facts)
    if refusal is not None:
        return Refused(Check.POLICY, f"Refused by policy: {refusal}", tool, args)
    if tool.risk is Risk.READ:
        return Allowed(tool, args)
    requirement = requirement_for(tool, args, state.facts, approvals)
    if requirement.refused:
        return Refused(Check.POLICY, f"Refused by approval rule: {requirement.refused}", tool, args)
    need = _needs_person(tool, args, state, asks, requirement)
    if draft_only is not None and draft_only(tool.name):  # reads returned above: this acts
        draft = "draft only: the assistant prepares it, a person sends it"
        if need is None:
            return NeedsPerson(Check.APPROVAL, (draft,), tool, args, requirement)
        return NeedsPerson(need.check, (*need.reasons, draft), tool, args, requirement)
    return need if need is not None else Allowed(tool, args)


def policy_ruling(tool: Tool[Any], args: Any, facts: RunFacts) -> tuple[str | None, tuple[Verdict, ...]]:
    """The first hard policy rule's refusal (None: none refuses), and the verdicts that ask for a person."""
    asks: list[Verdict] = []
    for policy in tool.policies:
        verdict = policy(args, facts)
        if not verdict.allowed:
            return verdict.reason, ()
        if verdict.needs_person:
            asks.append(verdict)
    return None, tuple(asks)


def policy_refusal(tool: Tool[Any], args: Any, facts: RunFacts) -> str | None:
    """The first hard policy rule that refuses these arguments, given current facts (None: all allow).

    A verdict that asks for a person is not a refusal: re-checked after a person approved, it allows.
    """
    return policy_ruling(tool, args, facts)[0]


def _needs_person(
    tool: Tool[Any],
    args: Any,
    state: RunState,
    asks: tuple[Verdict, ...] = (),
    requirement: Requirement | None = None,
) -> NeedsPerson | None:
    """Every reason a side effect needs a person: screens, policies that ask, taint, the tool's own rules,
    and the approval rules that apply to these arguments."""
    reasons: list[str] = [
        f"a screen flagged content in this run as a possible prompt injection ({flag})"
        for flag in dict.fromkeys(state.suspicious)
    ]
    if state.unscreened:  # the caller should have screened first: fail closed, never open
        reasons.append("content this run read has not been screened yet")
    asked = [verdict for verdict in asks if state.tainted or not verdict.when_tainted]
    reasons.extend(verdict.reason for verdict in asked)
    tainted = state.tainted and (
        tool.needs_person_when_tainted or bool(state.suspicious) or any(v.when_tainted for v in asked)
    )
    if tainted:  # say what the run read
        reasons.append("this run read " + " and ".join(dict.fromkeys(state.taint_sources)))
    if tool.risk is Risk.APPROVAL:
        reasons.append(f"{tool.name} always needs a person")
    threshold = tool.approval_threshold(args, state.facts) if tool.approval_threshold else None
    if threshold:
        reasons.append(threshold)
    requirement = requirement or Requirement()
    if requirement.needs_person:
        reasons.extend(rule_reasons(requirement))
    if not reasons:
        return None
    check = Check.TAINT if state.suspicious or state.unscreened or tainted else Check.APPROVAL
    return NeedsPerson(check, tuple(reasons), tool, args, requirement)


def rule_reasons(requirement: Requirement) -> list[str]:
    """Each applied approval rule as a reason a person is asked, e.g. "refunds over $100 (rule ...)"."""
    return [name if reason == name else f"{reason} (rule: {name})" for name, reason in requirement.rules()]
