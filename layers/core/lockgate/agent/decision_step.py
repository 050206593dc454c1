"""A person's decision in the conversation of the run that proposed the call (``Task.respond``).

The proposed call was answered long ago ("NOT DONE YET: waiting for a person") and the run ended
with end_turn, so the decision cannot be that call's result. Lockgate makes a call for the model
instead: one ``decision_on_proposal`` tool_use, joined to the run's last assistant turn, and its
tool_result (``DecisionResponse.tool_result()`` as JSON) in the next user turn. The exchange is a
run step of its own (kind ``decision``, numbered after the run's last step), written once like
every step, so a redelivered event replays it and the model's next reply instead of asking again.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from lockgate.actions.responses import DecisionResponse
from lockgate.agent.run_totals import Totals
from lockgate.agent.runs import Run, Step

KIND = "decision"
TOOL = "decision_on_proposal"
SCHEMA: dict[str, Any] = {
    "name": TOOL,
    "description": (
        "What a person decided on one of your proposals (a call that waited for a person's approval): "
        "rejected, with the reviewer's words if they gave any; changed by the reviewer and run; or "
        "expired, because nobody decided in time (nothing ran). "
        "Lockgate calls it for you when the decision comes; call it yourself only to read a decision "
        "again."
    ),
    "input_schema": {
        "type": "object",
        "properties": {"approval_id": {"type": "string", "description": "The proposal's id (ap_...)."}},
        "required": ["approval_id"],
        "additionalProperties": False,
    },
}


def call_id(approval_id: str, outcome: str) -> str:
    """The exchange's tool_use id: the same for every delivery of one decision."""
    digest = hashlib.sha256(f"{approval_id}#{outcome}".encode()).hexdigest()[:24]
    return f"toolu_lockgate_{digest}"


def decision_key(response: DecisionResponse) -> str:
    """``<approval id>#<outcome>``: which decision resumed a run (``Run.resumed_by``)."""
    return f"{response.approval_id}#{response.outcome}"


def step_data(response: DecisionResponse) -> dict[str, Any]:
    """What the run records for the decision: the exchange, and what it was about."""
    use_id = call_id(response.approval_id, response.outcome)
    return {
        "approval_id": response.approval_id,
        "outcome": response.outcome,
        "tool": response.tool,
        "call_id": response.call_id,
        "use": {
            "type": "tool_use",
            "id": use_id,
            "name": TOOL,
            "input": {"approval_id": response.approval_id},
        },
        "result": {
            "type": "tool_result",
            "tool_use_id": use_id,
            "content": json.dumps(response.tool_result()),
        },
    }


def heard(run: Run) -> list[Step]:
    """The decisions recorded on the run, in order."""
    return [step for step in run.steps if step.kind == KIND]


def has_heard(run: Run, response: DecisionResponse) -> bool:
    """Whether this decision is already part of the run's record (a redelivery)."""
    use_id = call_id(response.approval_id, response.outcome)
    return any(step.data["use"]["id"] == use_id for step in heard(run))


def next_step(run: Run) -> int:
    """The number the decision's step takes: after every step the run recorded."""
    return max((step.n for step in run.steps), default=0) + 1


def segment(run: Run) -> str:
    """The part of the run the next call belongs to: after its latest decision, else "" (the first)."""
    decisions = heard(run)
    return f"{decisions[-1].data['approval_id']}#{decisions[-1].data['outcome']}" if decisions else ""


def add_to(messages: list[dict[str, Any]], data: dict[str, Any]) -> None:
    """The exchange into the conversation: the call joins the last assistant turn (roles alternate),
    or starts one after a user turn; its result is the next user turn."""
    last = messages[-1] if messages else None
    if last is not None and last["role"] == "assistant":
        content = last["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
        messages[-1] = {"role": "assistant", "content": [*blocks, data["use"]]}
    else:
        messages.append({"role": "assistant", "content": [data["use"]]})
    messages.append({"role": "user", "content": [data["result"]]})


def hear(run: Run, step: Step, messages: list[dict[str, Any]], totals: Totals) -> None:
    """A recorded decision into the conversation, as the loop replays the run; at the one that resumed
    it this time, the run's totals take up what it counted when it ended before (screens included)."""
    add_to(messages, step.data)
    if step == heard(run)[-1]:
        totals.resume(run.totals)


def answer(call: dict[str, Any], run: Run) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The model's own call of ``decision_on_proposal``: the decision the run heard, or an error for an
    approval it heard nothing about; None where no decision was heard (the tool was not offered)."""
    decisions = heard(run)
    if not decisions:
        return None
    asked = call.get("input")
    wanted = asked.get("approval_id") if isinstance(asked, dict) else None
    entry = {"tool": TOOL, "check": "cleared", "reason": "", "summary": f"read the decision on {wanted}"}
    for step in reversed(decisions):
        if step.data["approval_id"] == wanted:
            content = step.data["result"]["content"]
            return {"type": "tool_result", "tool_use_id": call.get("id", ""), "content": content}, {
                **entry,
                "outcome": "ok",
            }
    unknown = f"Unknown approval {wanted!r}: no decision on it has reached this run."
    block = {"type": "tool_result", "tool_use_id": call.get("id", ""), "content": unknown, "is_error": True}
    return block, {**entry, "outcome": "unknown approval"}


def limit_summary(run: Run, max_steps: int) -> str:
    """How a run that reached its step limit ended: a decision heard with no model step left says so."""
    last = max(run.steps, key=lambda s: (s.n, s.kind == KIND), default=None)
    if last is not None and last.kind == KIND:
        return (
            f"stopped after {max_steps} steps: the decision on {last.data['approval_id']} "
            f"({last.data['outcome']}) reached the run with no model step left to act on it"
        )
    return f"stopped after {max_steps} steps"
