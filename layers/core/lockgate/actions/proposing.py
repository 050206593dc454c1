"""How the agent loop asks for a person without knowing who answers (approvals implements it)."""

from __future__ import annotations

from typing import Any, Protocol

from lockgate.actions.facts import RunFacts
from lockgate.actions.guard import NeedsPerson


class Proposer(Protocol):
    """Turns a ruling that needs a person into a proposal; ``lockgate.approvals.requests`` is one."""

    def draft_only(self, tool: str) -> bool:
        """Whether ``tool`` is configured as "draft": the assistant prepares it, a person sends it."""
        ...

    def waiting(self, task: str, tool: str, target: str) -> dict[str, Any] | None:
        """The arguments of the proposal waiting for a person on (task, tool, target), or None."""
        ...

    def request(
        self,
        *,
        task: str,
        run_id: str,
        call_id: str,
        need: NeedsPerson,
        unverified_reason: str,
        facts: RunFacts,
    ) -> tuple[str, str]:
        """Propose the call; returns (text for the model, outcome for the run's record)."""
        ...
