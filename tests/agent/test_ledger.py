"""The operation ledger on moto: once, recorded outcomes, conflicts, UNKNOWN never retried."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from lockgate.actions.ledger import Ledger, LedgerConflict, OpState, idempotency_key_for
from lockgate.actions.tools import OutcomeUnknown, ToolError
from lockgate.clock import FixedClock
from lockgate.errors import Deferred
from tests.support import Aws, race


@pytest.fixture
def ledger(aws: Aws, clock: FixedClock) -> Ledger:
    return Ledger(aws.client("dynamodb"), aws.state_table, clock, lease_seconds=60)


def run(ledger: Ledger, effect: Any, key: str = "refund#A-1#10.00", fp: str = "fp1") -> Any:
    return ledger.execute(
        op_key=key,
        fingerprint=fp,
        tool="refund",
        run_id="r1",
        summary="refund $10",
        effect=effect,
        is_failure=lambda e: isinstance(e, ToolError),
        is_unknown=lambda e: isinstance(e, OutcomeUnknown),
    )


def test_effect_runs_once_and_a_repeat_returns_the_recorded_result(ledger: Ledger) -> None:
    calls: list[str] = []

    def effect(idem: str) -> dict[str, Any]:
        calls.append(idem)
        return {"refunded": "10.00"}

    first = run(ledger, effect)
    second = run(ledger, effect)
    assert calls == [idempotency_key_for("refund#A-1#10.00")]
    assert first.state is second.state is OpState.SUCCEEDED
    assert second.result == {"refunded": "10.00"}
    assert ledger.get("refund#A-1#10.00").state is OpState.SUCCEEDED  # type: ignore[union-attr]


def test_same_key_different_arguments_is_a_conflict_not_a_second_action(ledger: Ledger) -> None:
    calls: list[int] = []
    run(ledger, lambda idem: calls.append(1))
    with pytest.raises(LedgerConflict):
        run(ledger, lambda idem: calls.append(2), fp="different")
    assert calls == [1]


def test_failure_is_recorded_and_returned_on_repeat(ledger: Ledger) -> None:
    calls: list[int] = []

    def effect(idem: str) -> None:
        calls.append(1)
        raise ToolError("card declined")

    assert run(ledger, effect).state is OpState.FAILED
    again = run(ledger, effect)
    assert (again.state, again.error, calls) == (OpState.FAILED, "ToolError: card declined", [1])


@pytest.mark.parametrize("exc", [OutcomeUnknown("timeout after send"), RuntimeError("surprise")])
def test_uncertain_outcome_becomes_unknown_and_is_never_retried(ledger: Ledger, exc: Exception) -> None:
    calls: list[int] = []

    def effect(idem: str) -> None:
        calls.append(1)
        raise exc

    assert run(ledger, effect).state is OpState.UNKNOWN
    assert run(ledger, effect).state is OpState.UNKNOWN
    assert calls == [1]


def test_in_progress_elsewhere_defers_then_becomes_unknown_after_its_lease(
    ledger: Ledger, clock: FixedClock
) -> None:
    # Given another executor that began the operation and died mid-call
    started = threading.Event()

    def dies(idem: str) -> None:
        started.set()
        raise KeyboardInterrupt  # stands in for the process being killed

    with pytest.raises(KeyboardInterrupt):
        run(ledger, dies)
    # (a kill would not even record UNKNOWN; simulate the stuck row directly)
    ledger._db.update_item(  # noqa: SLF001 - test setup of a stuck row
        TableName=ledger._table,
        Key={"pk": {"S": "op#refund#A-1#10.00"}, "sk": {"S": "op"}},
        UpdateExpression="SET #s = :p, lease_expires_at = :e",
        ExpressionAttributeNames={"#s": "state"},
        ExpressionAttributeValues={":p": {"S": "IN_PROGRESS"}, ":e": {"N": str(int(clock.now()) + 60)}},
    )
    calls: list[int] = []
    # When another attempt arrives while the lease is live, it waits
    with pytest.raises(Deferred):
        run(ledger, lambda idem: calls.append(1))
    # And after the lease, the operation is UNKNOWN, not re-run
    clock.advance(61)
    assert run(ledger, lambda idem: calls.append(1)).state is OpState.UNKNOWN
    assert calls == []


def test_two_concurrent_executions_produce_one_side_effect(aws: Aws, clock: FixedClock) -> None:
    effects: list[str] = []
    lock = threading.Lock()
    barrier = threading.Barrier(8)
    outcomes: list[str] = []

    def effect(idem: str) -> str:
        with lock:
            effects.append(idem)
        return "ok"

    def attempt() -> None:
        ledger = Ledger(aws.client("dynamodb"), aws.state_table, clock)
        barrier.wait()
        try:
            outcomes.append(run(ledger, effect).state.value)
        except Deferred:
            outcomes.append("deferred")

    race([attempt] * 8)
    assert len(effects) == 1
    assert outcomes.count("SUCCEEDED") >= 1 and len(outcomes) == 8


def test_operation_keys_keep_the_format_stored_ledger_rows_were_written_with() -> None:
    from lockgate.actions.once import operation_key

    # Given a call without a business identity, and one with
    by_args = operation_key("helpdesk#msg-1", "send_email", None, {"to": "ada@example.com", "body": "Hé"})
    by_identity = operation_key("r", "refund_order", "refund#A-1#80.00", {})
    # Then the keys are exactly what earlier releases stored (a changed key would run an action twice)
    assert by_args == (
        "helpdesk#msg-1#send_email#9efd99a36c89ce0b8629ed0cb8f65720cf38489af7e4f2a1f1ad088e4204ac0f"
    )
    assert by_identity == "refund_order#refund#A-1#80.00"
