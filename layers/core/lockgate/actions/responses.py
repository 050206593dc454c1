"""A person's answer going back to the run that asked: the inbox event the approvals side sends and
the agent loop takes up (neither imports the other; both import this).

A task that sets ``Task.respond`` hears a rejection (with the reviewer's words) or an edited call
that ran as the result of its proposed tool call, and its run continues within its step budget:
it can tell the customer, or try something else.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from lockgate import tracing
from lockgate.inbox.events import internal_event
from lockgate.inbox.models import Delivery

SOURCE = "run"
EVENT_TYPE = "decision.response"
OUTCOMES = ("rejected", "edited", "failed", "refused")


@dataclass(frozen=True)
class DecisionResponse:
    """What a person decided on one proposal, as the run that proposed it hears it."""

    run_id: str
    """The run that proposed the call; it continues."""

    approval_id: str
    """The proposal (``ap_...``)."""

    task: str
    """The task the run belongs to."""

    call_id: str
    """The ``tool_use`` id of the proposed call in the run's conversation."""

    tool: str
    """The tool that was proposed."""

    outcome: str
    """``rejected`` (nothing ran), ``edited`` (a reviewer changed the arguments and it ran),
    ``failed`` (the edited call ran and failed), ``refused`` (the edited call was refused by policy) or
    ``expired`` (nobody decided in time, or it was not run in time: nothing ran)."""

    by: tuple[str, ...] = ()
    """Who decided: the rejecting reviewers, or the editor and the approvers of the edited version."""

    reason: str = ""
    """The reviewer's words (a rejection's reason), or why it did not run."""

    proposed: dict[str, Any] = field(default_factory=dict)
    """The arguments the agent proposed."""

    ran: dict[str, Any] | None = None
    """The arguments that ran (the edited version), or None when nothing ran."""

    result: Any = None
    """What the call returned (its ledger result) when it ran."""

    summary: str = ""
    """The proposal's one-line summary (for ``on_decision`` when the run cannot hear it)."""

    facts: dict[str, Any] = field(default_factory=dict)
    """The run's fact values stored with the proposal (``Task.restore_facts`` rebuilds them)."""

    def tool_result(self) -> dict[str, Any]:
        """The JSON the model reads as its proposed call's result."""
        # Which proposal it is about: a run may have asked a person more than once.
        told: dict[str, Any] = {
            "approval_id": self.approval_id,
            "tool": self.tool,
            "proposed": self.proposed,
            "decision": self.outcome,
            "by": list(self.by),
        }
        if self.reason:
            told["reviewer_said" if self.outcome == "rejected" else "why"] = self.reason
        if self.ran is not None:
            told["ran_with"] = self.ran
            changed = {k: v for k, v in self.ran.items() if self.proposed.get(k) != v}
            told["changed_by_reviewer"] = changed
        if self.result is not None:
            told["result"] = self.result
        return told

    def to_event(self, now: int) -> Delivery:
        """The inbox item ``run#<approval>#<outcome>``: stable, so a repeat dedupes."""
        body = json.dumps(asdict(self), default=str, sort_keys=True).encode()
        return internal_event(
            SOURCE, f"{self.approval_id}#{self.outcome}", EVENT_TYPE, body, now, trace=tracing.traceparent()
        )

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> DecisionResponse:
        """From the event body; KeyError or TypeError if it is not one."""
        return cls(
            run_id=str(data["run_id"]),
            approval_id=str(data["approval_id"]),
            task=str(data["task"]),
            call_id=str(data["call_id"]),
            tool=str(data["tool"]),
            outcome=str(data["outcome"]),
            by=tuple(str(b) for b in data.get("by", ())),
            reason=str(data.get("reason", "")),
            proposed=dict(data.get("proposed") or {}),
            ran=dict(data["ran"]) if data.get("ran") is not None else None,
            result=data.get("result"),
            summary=str(data.get("summary", "")),
            facts=dict(data.get("facts") or {}),
        )

    def notice_outcome(self) -> str:
        """The ``DecisionNotice`` outcome: rejected, done (an edit ran), expired or failed."""
        return {"rejected": "rejected", "edited": "done", "expired": "expired"}.get(self.outcome, "failed")
