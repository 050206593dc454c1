"""What a run produced, as checks see it: the final text and every tool call with what became of it."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lockgate.agent.runs import Run

# The guard's check values → what happened to the call, in the words case files use.
_STATUS = {"cleared": "made", "taint": "proposed", "approval": "proposed"}


@dataclass(frozen=True)
class ToolCall:
    """One tool call the model asked for: ``status`` is made, blocked or proposed (needs a person)."""

    tool: str
    args: Mapping[str, Any]
    status: str
    check: str = "cleared"
    outcome: str = ""


@dataclass(frozen=True)
class Transcript:
    """The evidence from one trial of a case (every event's run, in order)."""

    final_text: str
    calls: Sequence[ToolCall] = ()
    status: str = "completed"
    cost_usd: float = 0.0
    model_calls: int = 0
    extra: Mapping[str, Any] = field(default_factory=dict)

    def subject(self, where: str, status: str = "made") -> str:
        """What a check reads: "final", "TOOL.FIELD" (that argument of calls with ``status``) or "TOOL"."""
        if where == "final":
            return self.final_text
        tool, _, name = where.partition(".")
        made = [c for c in self.calls if c.tool == tool and status in ("attempted", c.status)]
        if name:
            return "\n".join(str(c.args.get(name, "")) for c in made)
        return "\n".join(json.dumps(dict(c.args), default=str) for c in made)


def transcript_from_runs(runs: Sequence[Run]) -> Transcript:
    """Pair each recorded tool_use with its recorded decision; the final text is the last run's last words."""
    calls: list[ToolCall] = []
    final, status, cost, model_calls = "", "missing", 0.0, 0
    for run in runs:
        for step in run.steps:
            if step.kind != "tools":
                continue
            asked = run.step(step.n, "model")
            uses = [
                b for b in (asked.data.get("content", []) if asked else []) if b.get("type") == "tool_use"
            ]
            # The loop answers calls in order and records one entry per call, so they pair by position.
            for use, entry in zip(uses, step.data.get("calls", []), strict=False):
                check = str(entry.get("check", ""))
                raw = use.get("input")
                calls.append(
                    ToolCall(
                        tool=str(entry.get("tool", use.get("name", ""))),
                        args=raw if isinstance(raw, dict) else {},
                        status=_STATUS.get(check, "blocked"),
                        check=check,
                        outcome=str(entry.get("outcome", "")),
                    )
                )
        models = [s for s in run.steps if s.kind == "model"]
        final = _text(models[-1].data) if models else ""
        status = run.status
        cost += float(run.totals.get("cost_usd", 0.0))
        model_calls += int(run.totals.get("model_calls", 0))
    return Transcript(final, calls, status, round(cost, 6), model_calls)


def _text(reply: Mapping[str, Any]) -> str:
    return "\n".join(
        str(b.get("text", "")) for b in reply.get("content", []) if b.get("type") == "text"
    ).strip()
