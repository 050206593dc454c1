"""`lockgate runs show`: a run's transcript, each tool call with its decision, tokens and cost."""

from __future__ import annotations

import json
from typing import Any

from lockgate.agent.runs import Run
from lockgate_infra.cli.run_actions import ASKED, ActionOutcome, utc

TEXT_PREVIEW = 300


def render(run: Run, actions: dict[str, ActionOutcome] | None = None) -> str:
    """Plain text for a terminal. Tool results are summarised, never dumped whole.

    ``actions`` (by tool_use id) say what became of the calls the run handed to a person.
    """
    actions = actions or {}
    lines = [
        f"run {run.run_id}  task {run.task}  status {run.status}",
        f"  started {utc(run.created_at)}   last written {utc(run.updated_at)}",
        f"  outcome: {run.outcome}",
    ]
    totals = run.totals
    if totals:
        usage = totals.get("usage", {})
        lines.append(
            f"  tokens: in {usage.get('input_tokens', 0)}, out {usage.get('output_tokens', 0)}, "
            f"cache write {usage.get('cache_creation_input_tokens', 0)}, "
            f"cache read {usage.get('cache_read_input_tokens', 0)}   cost ${totals.get('cost_usd', 0):.4f}"
            f"   model calls {totals.get('model_calls', 0)} (replayed {totals.get('replayed_steps', 0)})"
            f"   blocked calls {totals.get('blocked', 0)}"
        )
        for source in totals.get("taint_sources", []):
            lines.append(f"  read: {source}")
        for flag in totals.get("suspicious", []):
            lines.append(f"  SUSPICIOUS: {flag}")
    for step in run.steps:
        if step.kind == "model":
            lines.extend(_model_lines(step.n, step.data))
        elif step.kind == "intake":
            lines.extend(_intake_lines(step.data))
        elif step.kind == "decision":  # a person's decision that resumed the run (Task.respond)
            lines.extend(_decision_lines(step.n, step.data))
        elif step.kind in ("batch", "batch_result"):
            lines.append(
                f"\n[{step.n}] message batch: {step.data.get('batch_id') or step.data.get('outcome')}"
            )
        else:
            lines.extend(_tool_lines(step.data, actions))
    if actions:
        lines.append("\nactions a person was asked about (final outcome)")
        for action in actions.values():
            lines.append(f"  {action.summary}: {action.decision}; {action.result}")
    return "\n".join(lines)


def _intake_lines(data: dict[str, Any]) -> list[str]:
    tried = " → ".join(data.get("tried", []))
    if data.get("value") is None:
        return [
            f"\n[0] request NOT read ({tried}): a person must handle it",
            *(f"    {p}" for p in data["problems"]),
        ]
    return [f"\n[0] request read by {data.get('model')} (tried {tried}): {json.dumps(data['value'])}"]


def _decision_lines(n: int, data: dict[str, Any]) -> list[str]:
    told = str(data.get("result", {}).get("content", ""))
    on = f"{data.get('approval_id')} ({data.get('tool')})"
    return [
        f"\n[{n}] a person's decision on {on}: {data.get('outcome')}",
        f"    decision_on_proposal told the model: {_clip(told)}",
    ]


def _model_lines(n: int, data: dict[str, Any]) -> list[str]:
    usage = data.get("usage", {})
    via = (
        " from the response cache"
        if data.get("cache_hit")
        else " via a message batch"
        if data.get("batch")
        else ""
    )
    out = [
        f"\n[{n}] assistant{via} ({data.get('stop_reason')}, in {usage.get('input_tokens', 0)} / "
        f"out {usage.get('output_tokens', 0)} / cache read {usage.get('cache_read_input_tokens', 0)})"
    ]
    for block in data.get("content", []):
        if block.get("type") == "text" and block.get("text", "").strip():
            out.append(f"    says: {_clip(block['text'])}")
        elif block.get("type") == "tool_use":
            out.append(f"    calls {block.get('name')}({_clip(json.dumps(block.get('input', {})))})")
    return out


def _tool_lines(data: dict[str, Any], actions: dict[str, ActionOutcome]) -> list[str]:
    out = []
    for call, result in zip(data.get("calls", []), data.get("results", []), strict=False):
        verdict = call.get("check")
        label = "ran" if verdict == "cleared" else f"BLOCKED at {verdict}"
        detail = call.get("outcome") if verdict == "cleared" else call.get("reason")
        if call.get("outcome") in ASKED:
            label = f"asked a person ({verdict}: {call.get('reason')})"
            action = actions.get(str(result.get("tool_use_id")))
            detail = f"{action.decision}; {action.result}" if action else call.get("outcome")
        summary = call.get("summary") or call.get("tool")
        err = " (is_error)" if result.get("is_error") and call.get("outcome") not in ASKED else ""
        out.append(f"    {label}: {summary} -> {detail}{err}")
    return out


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= TEXT_PREVIEW else text[: TEXT_PREVIEW - 1] + "…"
