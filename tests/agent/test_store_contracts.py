"""One contract, two implementations: the DynamoDB stores on moto and the in-memory fakes.

The loop's logic tests run on the fakes (tests/fakes.py); these checks keep the fakes honest.
"""

from __future__ import annotations

from typing import Any

import pytest

from lockgate.actions.ledger import Ledger, LedgerConflict, OpState
from lockgate.actions.tools import OutcomeUnknown, ToolError
from lockgate.agent.runs import RunStore
from lockgate.clock import FixedClock
from tests.fakes import MemoryLedger, MemoryRuns
from tests.support import Aws


@pytest.fixture(params=["dynamodb", "memory"])
def runs(request: pytest.FixtureRequest, clock: FixedClock) -> Any:
    if request.param == "memory":
        return MemoryRuns(clock)
    aws: Aws = request.getfixturevalue("aws")
    return RunStore(aws.client("dynamodb"), aws.state_table, clock)


@pytest.fixture(params=["dynamodb", "memory"])
def ledger(request: pytest.FixtureRequest, clock: FixedClock) -> Any:
    if request.param == "memory":
        return MemoryLedger()
    aws: Aws = request.getfixturevalue("aws")
    return Ledger(aws.client("dynamodb"), aws.state_table, clock)


def test_a_run_opened_again_comes_back_with_its_steps(runs: Any) -> None:
    run = runs.open("github#d-1", "triage", "github#d-1")
    assert run.steps == [] and run.status == "running"
    runs.record(run, 1, "model", {"text": "first"})
    runs.record(run, 1, "tools", {"results": []})
    again = runs.open("github#d-1", "triage", "github#d-1")
    assert [(s.n, s.kind, s.data) for s in again.steps] == [
        (1, "model", {"text": "first"}),
        (1, "tools", {"results": []}),
    ]


def test_a_step_is_written_once_and_a_second_write_returns_the_first(runs: Any) -> None:
    run = runs.open("github#d-2", "triage", "github#d-2")
    first = runs.record(run, 1, "model", {"text": "first"})
    other = runs.open("github#d-2", "triage", "github#d-2")  # a concurrent replay's view
    second = runs.record(other, 1, "model", {"text": "second"})
    assert first.data == second.data == {"text": "first"}
    stored = runs.get("github#d-2")
    assert stored is not None and [s.data for s in stored.steps] == [{"text": "first"}]


def test_finish_records_how_the_run_ended(runs: Any) -> None:
    run = runs.open("github#d-3", "triage", "github#d-3")
    assert runs.finish(run, "completed", "replied", {"cost_usd": 0.01}) is True
    stored = runs.get("github#d-3")
    assert stored is not None
    assert (stored.status, stored.outcome, stored.totals) == ("completed", "replied", {"cost_usd": 0.01})
    assert runs.get("github#nope") is None


def test_a_replayed_finish_says_so_and_changes_nothing(runs: Any) -> None:
    # Given a run that ended
    run = runs.open("github#d-4", "triage", "github#d-4")
    runs.finish(run, "completed", "replied", {"cost_usd": 0.01})
    # When a redelivery replays it to its end and finishes it again
    replay = runs.open("github#d-4", "triage", "github#d-4")
    ended = runs.finish(replay, "step_limit", "other", {"cost_usd": 0.02})
    # Then that finish did not end the run (what follows a finish is not done again), and the
    # stored outcome is the first one
    assert ended is False
    stored = runs.get("github#d-4")
    assert stored is not None
    assert (stored.status, stored.outcome, stored.totals) == ("completed", "replied", {"cost_usd": 0.01})


def test_an_ended_run_reopens_once_for_a_decision_and_finishes_again(runs: Any) -> None:
    # Given a run that ended with end_turn
    run = runs.open("helpdesk#d-5", "support", "helpdesk#d-5")
    runs.finish(run, "completed", "replied", {"cost_usd": 0.01})
    first, second = runs.get("helpdesk#d-5"), runs.get("helpdesk#d-5")  # two decisions read it
    # When both try to reopen it from the status they read
    assert runs.reopen(first, "ap_1#rejected") is True
    assert runs.reopen(second, "ap_2#rejected") is False
    # Then it runs again for the first decision only, and a finish ends it again, once
    stored = runs.get("helpdesk#d-5")
    assert stored is not None and (stored.status, stored.resumed_by) == ("running", "ap_1#rejected")
    assert runs.finish(first, "completed", "told the customer", {"cost_usd": 0.02}) is True
    assert runs.finish(first, "completed", "again", {"cost_usd": 0.03}) is False
    ended = runs.get("helpdesk#d-5")
    assert ended is not None and (ended.status, ended.outcome) == ("completed", "told the customer")
    assert ended.resumed_by == "ap_1#rejected"


def test_a_running_run_is_not_reopened(runs: Any) -> None:
    # Given a run still running (its own delivery is being handled)
    run = runs.open("helpdesk#d-6", "support", "helpdesk#d-6")
    # When a decision tries to reopen it
    # Then it is refused and the run is as it was
    assert runs.reopen(run, "ap_1#rejected") is False
    stored = runs.get("helpdesk#d-6")
    assert stored is not None and (stored.status, stored.resumed_by) == ("running", "")


def _execute(ledger: Any, effect: Any, fingerprint: str = "f1") -> Any:
    return ledger.execute(
        op_key="refund#A-1",
        fingerprint=fingerprint,
        tool="refund",
        run_id="r1",
        summary="refund",
        effect=effect,
    )


def test_an_effect_runs_once_and_a_repeat_returns_what_was_recorded(ledger: Any) -> None:
    keys: list[str] = []

    def effect(key: str) -> dict[str, Any]:
        keys.append(key)
        return {"refund": "re_1"}

    first = _execute(ledger, effect)
    again = _execute(ledger, effect)
    assert keys == [first.idempotency_key] and keys[0].startswith("lg_")
    assert first.state is again.state is OpState.SUCCEEDED
    assert again.result == {"refund": "re_1"}


def test_the_same_key_with_other_arguments_is_a_conflict(ledger: Any) -> None:
    _execute(ledger, lambda key: "ok")
    with pytest.raises(LedgerConflict):
        _execute(ledger, lambda key: "ok", fingerprint="f2")


def test_a_tool_error_is_a_recorded_failure(ledger: Any) -> None:
    def refused(key: str) -> None:
        raise ToolError("card declined")

    op = _execute(ledger, refused)
    assert op.state is OpState.FAILED and "card declined" in (op.error or "")
    assert _execute(ledger, lambda key: "never").state is OpState.FAILED


@pytest.mark.parametrize("exc", [OutcomeUnknown("timed out"), RuntimeError("crash")])
def test_an_uncertain_outcome_is_unknown_and_never_retried_blindly(ledger: Any, exc: Exception) -> None:
    def uncertain(key: str) -> None:
        raise exc

    ran: list[str] = []
    assert _execute(ledger, uncertain).state is OpState.UNKNOWN
    assert _execute(ledger, ran.append).state is OpState.UNKNOWN and ran == []
