"""The tool calls of one model step: each through the guard's checks, then a refusal, a proposal for a
person, or the call run once through the operation ledger (and what it returned screened, if
untrusted); the step's answers recorded on the run together."""

from __future__ import annotations

import functools
import json
from dataclasses import replace
from typing import Any

from lockgate import tracing
from lockgate.actions.guard import Allowed, Check, NeedsPerson, Refused, RunState, rule_on
from lockgate.actions.ledger import LedgerConflict, OpState
from lockgate.actions.once import Operations, run_once, traced
from lockgate.actions.proposing import Proposer
from lockgate.actions.tools import Risk, Tool, ToolContext, ToolError
from lockgate.agent import decision_step
from lockgate.agent.invisible import strip_invisible
from lockgate.agent.run_totals import Totals
from lockgate.agent.runs import Run, Runs
from lockgate.agent.screen import RunAsk, Screener
from lockgate.agent.tasks import Task
from lockgate.config.model import ApprovalsConfig
from lockgate.telemetry import Log, Metrics

UNKNOWN_TOOL = "unknown_tool"  # what traces and logs call a name the task does not offer


class ToolCalls:
    """Answers the tool_use blocks of a model step for the loop, and records what they answered."""

    def __init__(
        self,
        *,
        runs: Runs,
        ledger: Operations,
        log: Log,
        metrics: Metrics,
        screener: Screener | None = None,
        approvals: Proposer | None = None,
        rules: ApprovalsConfig | None = None,
    ) -> None:
        self._runs = runs
        self._ledger = ledger
        self._log = log
        self._metrics = metrics
        self._screener = screener
        self._approvals = approvals
        self._rules = rules  # [approvals]: its rules refuse calls or ask for a person (None: hooks only)

    def step(
        self,
        task: Task,
        run: Run,
        n: int,
        calls: list[dict[str, Any]],
        state: RunState,
        totals: Totals,
        reply_text: str,
        ask: RunAsk,
    ) -> list[dict[str, Any]]:
        """Step ``n``'s tool results, all in call order: replayed from the run's record, or answered and
        recorded (with what the step added to the run's taint)."""
        recorded = run.step(n, "tools")
        if recorded is not None:
            state.taint_sources.extend(recorded.data.get("taint_added", []))
            state.suspicious.extend(recorded.data.get("suspicious_added", []))
            totals.blocked += sum(1 for c in recorded.data["calls"] if c["check"] != "cleared")
            return list(recorded.data["results"])
        taint_before, suspicious_before = len(state.taint_sources), len(state.suspicious)
        results, log = [], []
        for call in calls:  # answered in order, all in one user message
            block, entry = self.answer(task, run, call, state, reply_text, ask)
            results.append(block)
            log.append(entry)
            if entry["check"] != "cleared":
                totals.blocked += 1
        self.screen_pending(task, state, ask)  # before the step's record, as it counts
        self._runs.record(
            run,
            n,
            "tools",
            {
                "results": results,
                "calls": log,
                "taint_added": state.taint_sources[taint_before:],
                "suspicious_added": state.suspicious[suspicious_before:],
            },
        )
        return results

    def answer(
        self, task: Task, run: Run, call: dict[str, Any], state: RunState, reply_text: str, ask: RunAsk
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """The tool_result block for the call, and the entry the run records about it.

        What an untrusted read returned waits to be screened with the step's other reads, and is
        screened before this run's guard rules on anything but a read (``screen_pending``).
        """
        call_id = str(call.get("id", ""))[:64]
        call_attributes = {"gen_ai.tool.call.id": call_id, "gen_ai.tool.type": "function"}
        # What reaches traces, metrics and logs is a name the task offers, never the model's own words.
        with tracing.tool_span(offered_name(task, call), {**call_attributes, "lockgate.run.id": run.run_id}):
            result, entry = self._answer(task, run, call, state, reply_text, ask)
            tracing.annotate(
                {
                    "lockgate.guard.check": entry.get("check"),
                    "lockgate.guard.refused": entry.get("check") not in ("cleared", None),
                    "lockgate.tool.outcome": entry.get("outcome"),
                }
            )
        return result, entry

    def _answer(
        self, task: Task, run: Run, call: dict[str, Any], state: RunState, reply_text: str, ask: RunAsk
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        name, call_id = str(call.get("name", "")), str(call.get("id", ""))
        if name == decision_step.TOOL and (heard := decision_step.answer(call, run)) is not None:
            return heard  # offered once a decision was heard: a read of what the run was told
        if not _reads(task, name):
            self.screen_pending(task, state, ask)
        draft_only = self._approvals.draft_only if self._approvals is not None else None
        if self._approvals is not None and state.facts.pending is None:
            # Policies may count what already waits for a person (e.g. refunds pending on an order).
            state.facts = replace(state.facts, pending=functools.partial(self._approvals.waiting, task.name))
        ruling = rule_on(task.tools, name, call.get("input"), state, draft_only, self._rules)
        entry: dict[str, Any] = {"tool": name, "check": ruling.check.value, "reason": ruling.reason}
        if ruling.tool is not None and ruling.args is not None:
            entry["summary"] = ruling.tool.summary(ruling.args)
        if not isinstance(ruling, Allowed):
            self._blocked(run, offered_name(task, call), ruling)
            if isinstance(ruling, NeedsPerson) and self._approvals is not None:
                text, entry["outcome"] = self._approvals.request(
                    task=task.name,
                    run_id=run.run_id,
                    call_id=call_id,
                    need=ruling,
                    unverified_reason=reply_text,
                    facts=state.facts,
                )
                return _result(call_id, text, error=True), entry
            return _result(call_id, _refusal_text(ruling), error=True), entry
        tool, args = ruling.tool, ruling.args
        content, error, outcome = self._execute(task, run, tool, args, state)
        entry["outcome"] = outcome
        if tool.untrusted_result and outcome in READ_BACK:  # what the tool answered, errors too
            source = _taint_source(tool, args, content)
            if source not in state.taint_sources:  # what the run read, each thing once
                state.taint_sources.append(source)
            content, hidden = strip_invisible(content)  # what no person sees, no model reads
            if hidden:
                state.suspicious.append(f"{source}: {hidden} invisible characters removed")
                self._metrics.add_metric(name="InvisibleTextRemoved", unit="Count", value=1)
            if self._screener is not None and task.screen_model:
                state.unscreened.append((source, content))
        return _result(call_id, content, error=error), entry

    def screen_pending(self, task: Task, state: RunState, ask: RunAsk) -> None:
        """Screen what the run read and has not screened yet; each flag makes the run suspicious."""
        pending, state.unscreened = state.unscreened, []
        if not pending or self._screener is None or not task.screen_model:
            return
        flags = self._screener.screen_all(task.screen_model, [content for _, content in pending], ask)
        for (source, _), flag in zip(pending, flags, strict=True):
            if flag:
                state.suspicious.append(f"{source}: {flag}")
                self._metrics.add_metric(name="InjectionSuspected", unit="Count", value=1)

    def _execute(
        self, task: Task, run: Run, tool: Tool[Any], args: Any, state: RunState
    ) -> tuple[str, bool, str]:
        """(content for the model, is_error, outcome for the record)."""
        if not tool.has_side_effect:
            try:
                context = ToolContext(run.run_id, state.facts, None, task.services)
                return _json(tool.run(args, context)), False, "ok"
            except ToolError as exc:
                return str(exc), True, "tool error"
        try:
            op = run_once(
                self._ledger,
                tool,
                args,
                canonical=args.model_dump(mode="json"),
                run_id=run.run_id,
                facts=state.facts,
                services=task.services,
                summary=tool.summary(args),
                segment=decision_step.segment(run),
            )
        except LedgerConflict as exc:
            self._metrics.add_metric(name="LedgerConflict", unit="Count", value=1)
            return f"Refused: {exc}. Nothing was done.", True, "conflict"
        tracing.annotate(traced(op))
        if op.state is OpState.SUCCEEDED:
            return _json(op.result), False, "succeeded"
        if op.state is OpState.FAILED:
            return op.error or "the action failed", True, "failed"
        self._metrics.add_metric(name="OperationUnknown", unit="Count", value=1)
        return (
            (
                "The outcome of this action is unknown; a person will check it. Do not retry it and do "
                "not tell the customer it happened."
            ),
            True,
            "unknown",
        )

    def _blocked(self, run: Run, name: str, ruling: NeedsPerson | Refused) -> None:
        self._metrics.add_metric(name="ToolCallBlocked", unit="Count", value=1)
        self._log.warning(
            "tool call blocked",
            extra={
                "run": run.run_id,
                "tool": name,
                "check": ruling.check.value,
                # The reason for an unknown tool quotes the model's name for it: not in the log.
                "reason": "not offered to this task"
                if ruling.check is Check.OFFERED
                else ruling.reason[:300],
            },
        )


# Outcomes whose text is the tool's answer (its own error included), not Lockgate's words about it.
READ_BACK = frozenset({"ok", "tool error", "succeeded", "failed"})


def offered_name(task: Task, call: dict[str, Any]) -> str:
    """The call's tool name if the task offers it (or it is Lockgate's own), else ``unknown_tool``."""
    name = str(call.get("name", ""))
    return name if task.tool(name) is not None or name == decision_step.TOOL else UNKNOWN_TOOL


def _reads(task: Task, name: str) -> bool:
    """Whether ``name`` is one of the task's read tools (whose ruling no screen can change)."""
    return any(tool.name == name and tool.risk is Risk.READ for tool in task.tools)


def _taint_source(tool: Tool[Any], args: Any, content: str) -> str:
    """What the run read, in words for the approval page: the tool's own label, else its summary."""
    if tool.taint_label is not None:
        try:
            return tool.taint_label(args, json.loads(content))
        except (ValueError, KeyError, TypeError):
            pass  # fall back to the summary rather than fail the run over a label
    return f"untrusted content ({tool.name}: {tool.summary(args)})"


def _refusal_text(ruling: NeedsPerson | Refused) -> str:
    if isinstance(ruling, NeedsPerson):
        return (
            f"NOT DONE: {ruling.tool.name} needs a person's approval ({ruling.reason}). Nothing has "
            "happened. Tell the customer their request was passed to the team; do not say it is done."
        )
    return ruling.reason


def _result(call_id: str, content: str, *, error: bool) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id, "content": content}
    if error:
        block["is_error"] = True
    return block


def _json(value: Any) -> str:
    # Sorted keys (and sorted sets): the same result is the same bytes whatever order a store or
    # service returned it in, so the prompt prefix it becomes part of stays cacheable.
    return json.dumps(value, default=_plain, ensure_ascii=False, sort_keys=True)


def _plain(value: Any) -> Any:
    if isinstance(value, set | frozenset):
        return sorted(value, key=str)
    return str(value)
