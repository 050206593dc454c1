"""In-memory stand-ins for the stores the agent loop uses, for tests about the loop's own logic.

They keep the stores' contracts (write-once steps, one outcome per operation key, a conflict
for the same key with other arguments, UNKNOWN when an effect's outcome is uncertain), and
``tests/agent/test_store_contracts.py`` runs the same checks against them and the DynamoDB
stores on moto, so a fake cannot drift from what deploys. Tests about DynamoDB behaviour
(conditions, races, pagination) use moto.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from lockgate.actions.ledger import LedgerConflict, Operation, OpState, idempotency_key_for
from lockgate.actions.tools import OutcomeUnknown, ToolError
from lockgate.agent.runs import Run, Step
from lockgate.clock import Clock


class MemoryRuns:
    """Runs and their steps in a dict; steps are written once."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._runs: dict[str, Run] = {}

    def open(self, run_id: str, task: str, delivery: str) -> Run:
        now = int(self._clock.now())
        stored = self._runs.setdefault(run_id, Run(run_id, task, delivery, created_at=now, updated_at=now))
        return copy.deepcopy(stored)

    def record(self, run: Run, n: int, kind: str, data: dict[str, Any]) -> Step:
        stored = self._runs[run.run_id]
        existing = stored.step(n, kind)
        if existing is not None:
            return copy.deepcopy(existing)
        step = Step(n, kind, copy.deepcopy(data))
        stored.steps.append(step)
        stored.steps.sort(key=lambda s: (s.n, s.kind != "model"))
        run.steps.append(step)
        return step

    def finish(self, run: Run, status: str, outcome: str, totals: dict[str, Any]) -> bool:
        stored = self._runs[run.run_id]
        if stored.status != "running":
            return False
        now = int(self._clock.now())
        stored.status, stored.outcome, stored.totals, stored.updated_at = status, outcome, dict(totals), now
        run.status, run.outcome, run.totals, run.updated_at = status, outcome, totals, now
        return True

    def reopen(self, run: Run, resumed_by: str) -> bool:
        stored = self._runs[run.run_id]
        if run.status == "running" or stored.status != run.status:
            return False
        now = int(self._clock.now())
        stored.status, stored.resumed_by, stored.updated_at = "running", resumed_by, now
        run.status, run.resumed_by, run.updated_at = "running", resumed_by, now
        return True

    def get(self, run_id: str) -> Run | None:
        stored = self._runs.get(run_id)
        return copy.deepcopy(stored) if stored is not None else None


class MemoryLedger:
    """Operations by key: each effect runs once; a repeat returns what was recorded."""

    def __init__(self) -> None:
        self.operations: dict[str, Operation] = {}

    def execute(
        self,
        *,
        op_key: str,
        fingerprint: str,
        tool: str,
        run_id: str,
        summary: str,
        effect: Callable[[str], Any],
        is_failure: Callable[[BaseException], bool] = lambda exc: isinstance(exc, ToolError),
        is_unknown: Callable[[BaseException], bool] = lambda exc: isinstance(exc, OutcomeUnknown),
    ) -> Operation:
        existing = self.operations.get(op_key)
        if existing is not None:
            if existing.fingerprint != fingerprint:
                raise LedgerConflict(f"operation {op_key!r} was already used with different arguments")
            return existing
        idem = idempotency_key_for(op_key)
        begun = Operation(op_key, fingerprint, OpState.IN_PROGRESS, tool, run_id, summary, idem)
        self.operations[op_key] = begun
        try:
            result = effect(idem)
        except BaseException as exc:
            state = OpState.FAILED if is_failure(exc) and not is_unknown(exc) else OpState.UNKNOWN
            error = f"{type(exc).__name__}: {exc}"[:1000]
            self.operations[op_key] = Operation(
                op_key, fingerprint, state, tool, run_id, summary, idem, error=error
            )
            if state is OpState.UNKNOWN and not isinstance(exc, Exception):
                raise
            return self.operations[op_key]
        done = Operation(op_key, fingerprint, OpState.SUCCEEDED, tool, run_id, summary, idem, result=result)
        self.operations[op_key] = done
        return done

    def get(self, op_key: str) -> Operation | None:
        return self.operations.get(op_key)
