"""One version of a proposal checked as the worker would run it, in the worker and nowhere else.

The tool still offered by the task, its argument schema unchanged since the proposal, the arguments
valid for its own model, its hard policies against current facts, and its approval rules (the
file's thresholds and the tool's hook) on these exact arguments. The executor checks every approved
call this way before it runs; the approval side asks the same question of an edit before it records
it (``lockgate.approvals.checking``), so whatever the worker would refuse is refused while the
reviewer is still there, and the reviewer reads the summary the tool builds for what will run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from lockgate.actions.facts import RunFacts
from lockgate.actions.guard import policy_refusal
from lockgate.actions.once import operation_key_for
from lockgate.actions.requirements import requirement_for
from lockgate.actions.tools import Tool, ToolArgumentsInvalid
from lockgate.agent.tasks import Task
from lockgate.approvals.checking import CHECK_EVENT, VersionCheck
from lockgate.approvals.proposals import Proposal, ProposalStore
from lockgate.config import ApprovalsConfig
from lockgate.config.rules import Requirement

MAX_ID_CHARS = 64


class Unfit(StrEnum):
    """Why a version would not run."""

    GONE = "gone"  # the task no longer offers the tool
    SCHEMA = "schema"  # a newer deployment changed what the tool takes
    INVALID = "invalid"  # the tool's own model refuses the arguments
    POLICY = "policy"  # a hard policy refuses them against current facts
    RULE = "rule"  # an approval rule refuses them outright


@dataclass(frozen=True)
class Refusal:
    """A version the worker would not run, and why."""

    unfit: Unfit
    reason: str


@dataclass(frozen=True)
class Examined:
    """A version that passed every check: what would run, under which facts, needing whom."""

    tool: Tool[Any]
    args: Any
    facts: RunFacts
    requirement: Requirement
    summary: str
    op_key: str


class VersionChecks:
    """The worker's checks of a version: for the executor, and for the approval side's edits."""

    def __init__(
        self, tasks: Mapping[str, Task], config: ApprovalsConfig, proposals: ProposalStore | None = None
    ) -> None:
        self._tasks = tasks
        self._config = config
        self._proposals = proposals  # to answer by approval id (the approval side's question)

    def examine(self, proposal: Proposal, args: Mapping[str, Any]) -> Examined | Refusal:
        """Every check on ``args`` as a version of ``proposal``; the first that fails says why."""
        task = self._tasks.get(proposal.task)
        tool = task.tool(proposal.tool) if task else None
        if task is None or tool is None:
            return Refusal(Unfit.GONE, f"task {proposal.task} no longer offers {proposal.tool}")
        if proposal.tool_schema and proposal.tool_schema != tool.args_fingerprint():
            return Refusal(Unfit.SCHEMA, f"{proposal.tool}'s arguments changed since it was proposed")
        try:
            validated = tool.validate(dict(args))
        except ToolArgumentsInvalid as exc:
            return Refusal(Unfit.INVALID, f"arguments not valid: {exc}")
        facts = task.facts_from(proposal.extra.get("facts", {}))
        refusal = policy_refusal(tool, validated, facts)
        if refusal is not None:
            return Refusal(Unfit.POLICY, f"refused by policy: {refusal}")
        requirement = requirement_for(tool, validated, facts, self._config)
        if requirement.refused:
            return Refusal(Unfit.RULE, f"refused by approval rule: {requirement.refused}")
        summary = (
            tool.summary_with_facts(validated, facts) if tool.summary_with_facts else tool.summary(validated)
        )
        canonical = dict(args)
        op_key = operation_key_for(tool, validated, proposal.run_id, canonical)
        return Examined(tool, validated, facts, requirement, summary, op_key)

    def check(self, approval_id: str, args: Mapping[str, Any]) -> VersionCheck:
        """``CheckVersion``: the answer about ``args`` as a version of the stored proposal."""
        proposal = self._proposals.get(approval_id) if self._proposals is not None else None
        if proposal is None:
            return VersionCheck(refusal="no such proposal")
        examined = self.examine(proposal, args)
        if isinstance(examined, Refusal):
            return VersionCheck(refusal=examined.reason)
        return VersionCheck("", examined.summary, examined.requirement, examined.op_key)

    def answer(self, event: Mapping[str, Any]) -> dict[str, Any]:
        """The worker's answer to a ``check-version`` invocation (malformed ones are refused, not raised)."""
        approval_id, args = event.get("approval_id"), event.get("args")
        if (
            event.get("lockgate") != CHECK_EVENT
            or not isinstance(approval_id, str)
            or not isinstance(args, dict)
        ):
            return VersionCheck(refusal="not a version check").to_json()
        if not approval_id or len(approval_id) > MAX_ID_CHARS:
            return VersionCheck(refusal="no such proposal").to_json()
        return self.check(approval_id, args).to_json()


def is_check(event: Any) -> bool:
    """Whether a direct invocation of the worker is a version check (not an SQS batch)."""
    return isinstance(event, dict) and event.get("lockgate") == CHECK_EVENT
