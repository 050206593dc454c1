"""One tool call the model asked for: the guard's checks, then a refusal, a proposal for a person,
or the call run once through the operation ledger (and what it returned screened, if untrusted)."""

from __future__ import annotations

import json
from typing import Any

from lockgate.actions.guard import Decision, RunState, decide
from lockgate.actions.ledger import Ledger, LedgerConflict, OpState, operation_key
from lockgate.actions.tools import OutcomeUnknown, Tool, ToolContext, ToolError, fingerprint
from lockgate.agent.runs import Run
from lockgate.agent.screen import Ask, Screener
from lockgate.agent.tasks import Task
from lockgate.approvals.requests import ApprovalRequests
from lockgate.telemetry import Log, Metrics, Tracing


class ToolCalls:
    """Answers tool_use blocks for the loop; the loop records what they answered."""

    def __init__(
        self,
        *,
        ledger: Ledger,
        log: Log,
        metrics: Metrics,
        tracing: Tracing,
        screener: Screener | None = None,
        approvals: ApprovalRequests | None = None,
    ) -> None:
        self._ledger = ledger
        self._log = log
        self._metrics = metrics
        self._tracing = tracing
        self._screener = screener
        self._approvals = approvals

    def answer(
        self, task: Task, run: Run, call: dict[str, Any], state: RunState, reply_text: str, ask: Ask
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """The tool_result block for the call, and the entry the run records about it."""
        name, call_id = str(call.get("name", "")), str(call.get("id", ""))
        decision = decide(task, name, call.get("input"), state)
        if decision.cleared and self._approvals is not None:
            decision = self._approvals.draft_only(decision)
        entry: dict[str, Any] = {"tool": name, "check": decision.check.value, "reason": decision.reason}
        if decision.tool is not None and decision.args is not None:
            entry["summary"] = decision.tool.summary(decision.args)
        if not decision.cleared:
            self._blocked(run, name, decision)
            if decision.needs_person and self._approvals is not None:
                text, entry["outcome"] = self._approvals.request(
                    task=task.name,
                    run_id=run.run_id,
                    call_id=call_id,
                    decision=decision,
                    unverified_reason=reply_text,
                    facts=state.facts,
                )
                return _result(call_id, text, error=True), entry
            return _result(call_id, _refusal_text(decision), error=True), entry
        tool, args = decision.tool, decision.args
        assert tool is not None  # cleared decisions carry their tool
        with self._tracing.span("tool call", tool=tool.name):
            content, error, outcome = self._execute(task, run, tool, args, state)
        entry["outcome"] = outcome
        if not error and tool.untrusted_result:
            source = _taint_source(tool, args, content)
            state.taint_sources.append(source)
            if self._screener is not None and task.screen_model:
                flag = self._screener.screen(task.screen_model, content, ask)
                if flag:
                    state.suspicious.append(f"{source}: {flag}")
                    self._metrics.add_metric(name="InjectionSuspected", unit="Count", value=1)
        return _result(call_id, content, error=error), entry

    def _execute(
        self, task: Task, run: Run, tool: Tool[Any], args: Any, state: RunState
    ) -> tuple[str, bool, str]:
        """(content for the model, is_error, outcome for the record)."""

        def effect(idempotency_key: str | None) -> Any:
            context = ToolContext(run.run_id, state.facts, idempotency_key, task.services)
            return tool.run(args, context)

        if not tool.has_side_effect:
            try:
                return _json(effect(None)), False, "ok"
            except ToolError as exc:
                return str(exc), True, "tool error"
        canonical = args.model_dump(mode="json")
        op_key = operation_key(run.run_id, tool.name, tool.ledger_identity(args, run.run_id), canonical)
        try:
            op = self._ledger.execute(
                op_key=op_key,
                fingerprint=fingerprint(canonical),
                tool=tool.name,
                run_id=run.run_id,
                summary=tool.summary(args),
                effect=effect,
                is_failure=lambda exc: isinstance(exc, ToolError),
                is_unknown=lambda exc: isinstance(exc, OutcomeUnknown),
            )
        except LedgerConflict as exc:
            self._metrics.add_metric(name="LedgerConflict", unit="Count", value=1)
            return f"Refused: {exc}. Nothing was done.", True, "conflict"
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

    def _blocked(self, run: Run, name: str, decision: Decision) -> None:
        self._metrics.add_metric(name="ToolCallBlocked", unit="Count", value=1)
        self._log.warning(
            "tool call blocked",
            extra={
                "run": run.run_id,
                "tool": name,
                "check": decision.check.value,
                "reason": decision.reason[:300],
            },
        )


def _taint_source(tool: Tool[Any], args: Any, content: str) -> str:
    """What the run read, in words for the approval page: the tool's own label, else its summary."""
    if tool.taint_label is not None:
        try:
            return tool.taint_label(args, json.loads(content))
        except (ValueError, KeyError, TypeError):
            pass  # fall back to the summary rather than fail the run over a label
    return f"untrusted content ({tool.name}: {tool.summary(args)})"


def _refusal_text(decision: Decision) -> str:
    if decision.needs_person:
        tool = decision.tool.name if decision.tool else "this action"
        return (
            f"NOT DONE: {tool} needs a person's approval ({decision.reason}). Nothing has happened. "
            "Tell the customer their request was passed to the team; do not say it is done."
        )
    return decision.reason


def _result(call_id: str, content: str, *, error: bool) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id, "content": content}
    if error:
        block["is_error"] = True
    return block


def _json(value: Any) -> str:
    return json.dumps(value, default=str, ensure_ascii=False)
