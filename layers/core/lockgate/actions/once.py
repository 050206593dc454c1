"""The one path from a cleared or approved tool call to its side effect: once, through the ledger.

The agent loop and the approval executor both call ``run_once``. The operation key comes from
the system (run id, tool, the tool's business identity or the canonical arguments), never from
the model, so a repeat of the same call returns what the ledger recorded instead of acting again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from lockgate.actions.facts import RunFacts
from lockgate.actions.ledger import Operation
from lockgate.actions.tools import Tool, ToolContext, fingerprint


class Operations(Protocol):
    """The ledger as running a call once needs it: ``Ledger`` in DynamoDB, an in-memory fake in tests."""

    def execute(
        self,
        *,
        op_key: str,
        fingerprint: str,
        tool: str,
        run_id: str,
        summary: str,
        effect: Callable[[str], Any],
    ) -> Operation:
        """Run ``effect(idempotency_key)`` once for ``op_key``; a repeat returns the recorded outcome."""
        ...


def operation_key(run_id: str, tool: str, identity: str | None, args: Mapping[str, Any]) -> str:
    """The ledger key for a tool call: the business identity, else run + tool + canonical arguments."""
    if identity is not None:
        return f"{tool}#{identity}"
    return f"{run_id}#{tool}#{fingerprint(dict(args))}"


def operation_key_for(
    tool: Tool[Any], args: Any, run_id: str, canonical: Mapping[str, Any], segment: str = ""
) -> str:
    """The ledger key of a call: the same whether the loop runs it or a person approved it first.

    ``segment`` names the part of a run that a person's decision resumed (``Task.respond``): an
    identity unique per run (``Tool.identity_per_run``) is unique per part, so the reply telling the
    customer a decision is not the reply to their email.
    """
    scope = f"{run_id}#{segment}" if segment else run_id
    return operation_key(run_id, tool.name, tool.ledger_identity(args, scope), canonical)


def run_once(
    ledger: Operations,
    tool: Tool[Any],
    args: Any,
    *,
    canonical: Mapping[str, Any],
    run_id: str,
    facts: RunFacts,
    services: Mapping[str, Any],
    summary: str,
    segment: str = "",
) -> Operation:
    """Run ``tool`` with validated ``args`` at most once; LedgerConflict if its key saw other arguments.

    ``segment``: the resumed part of the run the call belongs to (see ``operation_key_for``).
    """

    def effect(idempotency_key: str | None) -> Any:
        return tool.run(args, ToolContext(run_id, facts, idempotency_key, services))

    return ledger.execute(
        op_key=operation_key_for(tool, args, run_id, canonical, segment),
        fingerprint=fingerprint(canonical),
        tool=tool.name,
        run_id=run_id,
        summary=summary,
        effect=effect,
    )


def traced(op: Operation) -> dict[str, str]:
    """What a trace says of an operation: its state and idempotency key (the key can name a person)."""
    return {"lockgate.ledger.idempotency_key": op.idempotency_key, "lockgate.ledger.state": op.state.value}
