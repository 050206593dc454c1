"""The stored item schema and the upgrade rule (lockgate.schema), on moto.

Runs, proposals and ledger rows carry the schema they were written with. Items from an older
version are read as they are; items from a newer one are never acted on; an approved proposal
whose tool changed what it takes expires instead of running.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
from pydantic import BaseModel, Field

from lockgate.actions.ledger import Ledger
from lockgate.agent.runs import RunStore
from lockgate.errors import PermanentFailure
from lockgate.schema import COMPRESSED_STEP, ITEM_SCHEMA, SchemaTooNew
from tests.agent.conftest import AgentRig
from tests.agent.test_approvals import Approvals
from tests.agent.toolkit import Effects
from tests.support import Aws, state_row


def _items(aws: Aws, logical_id: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = aws.client("dynamodb").scan(TableName=aws.names[logical_id])["Items"]
    return items


def _newer(aws: Aws, pk: str, sk: str) -> None:
    """What a newer deployment would have written to this State item."""
    aws.client("dynamodb").update_item(
        TableName=aws.state_table,
        Key={"pk": {"S": pk}, "sk": {"S": sk}},
        UpdateExpression="SET #v = :v",
        ExpressionAttributeNames={"#v": "schema"},
        ExpressionAttributeValues={":v": {"N": str(ITEM_SCHEMA + 1)}},
    )


def test_runs_proposals_and_ledger_rows_are_written_with_the_schema_number(rig: AgentRig) -> None:
    # Given an approved payment that ran (a run, its steps, a proposal, a ledger row)
    flow = Approvals(rig, Effects())
    approval_id = flow.propose_payment()
    flow.approve(approval_id, "alice")
    flow.execute_all()
    assert len(flow.effects.paid) == 1
    # Then every item of those kinds says which schema wrote it
    state = _items(rig.aws, "StateTable")
    runs = [i for i in state if i["pk"]["S"].startswith("run#")]
    ops = [i for i in state if "op_key" in i]
    assert runs and ops
    proposals = _items(rig.aws, "ApprovalsTable")
    # (the oldest schema that reads it: 1 unless it uses something newer, so a rollback reads it)
    for item in [*runs, *ops, *proposals]:
        expected = COMPRESSED_STEP if "dataz" in item else 1
        assert item["schema"] == {"N": str(expected)}, item.get("sk") or item.get("approval_id")
    # and the proposal remembers the argument schema it was made under
    assert proposals[0]["tool_schema"]["S"] == flow.task.tool("pay").args_fingerprint()  # type: ignore[union-attr]


def test_items_from_before_the_schema_number_are_read_as_schema_one(aws: Aws, clock: Any) -> None:
    # Given a run recorded before items carried a schema number
    runs = RunStore(aws.client("dynamodb"), aws.state_table, clock)
    run = runs.open("github#old", "test-task", "github#old")
    runs.record(run, 1, "model", {"text": "hello"})
    for sk in ("meta", "step#001#model"):
        aws.client("dynamodb").update_item(
            TableName=aws.state_table,
            Key={"pk": {"S": "run#github#old"}, "sk": {"S": sk}},
            UpdateExpression="REMOVE #v",
            ExpressionAttributeNames={"#v": "schema"},
        )
    # When it is read, it is read as it is
    again = runs.get("github#old")
    assert again is not None and [s.data for s in again.steps] == [{"text": "hello"}]


def test_a_run_written_by_a_newer_version_is_not_replayed(aws: Aws, clock: Any) -> None:
    # Given a run whose step a newer deployment wrote (found after a rollback)
    runs = RunStore(aws.client("dynamodb"), aws.state_table, clock)
    run = runs.open("github#new", "test-task", "github#new")
    runs.record(run, 1, "model", {"text": "hello"})
    _newer(aws, "run#github#new", "step#001#model")
    # When this version opens it again, it refuses to read it: a permanent failure for a person
    with pytest.raises(SchemaTooNew, match="item schema 3, newer than this deployment's 2") as caught:
        runs.open("github#new", "test-task", "github#new")
    assert isinstance(caught.value, PermanentFailure)


def test_a_ledger_row_written_by_a_newer_version_is_never_acted_on(aws: Aws, clock: Any) -> None:
    # Given an operation a newer deployment left pending
    ledger = Ledger(aws.client("dynamodb"), aws.state_table, clock)
    ledger.execute(op_key="refund#A-1", fingerprint="f", tool="refund", run_id="r", summary="s", effect=str)
    _newer(aws, "op#refund#A-1", "op")
    before = state_row(aws, "op#refund#A-1", "op")
    ran: list[str] = []
    # When this version meets it, nothing runs and the row is unchanged
    with pytest.raises(SchemaTooNew):
        ledger.execute(
            op_key="refund#A-1", fingerprint="f", tool="refund", run_id="r", summary="s", effect=ran.append
        )
    assert ran == [] and state_row(aws, "op#refund#A-1", "op") == before


def test_an_approved_proposal_whose_tool_changed_expires_instead_of_running(rig: AgentRig) -> None:
    heard: list[tuple[str, str]] = []
    flow = Approvals(rig, Effects())
    flow.task = replace(
        flow.task, on_decision=lambda notice, services: heard.append((notice.outcome, notice.detail))
    )
    # Given a payment proposed and approved under today's tool
    approval_id = flow.propose_payment()
    flow.approve(approval_id, "alice")

    # When a new deployment changes what the tool takes before the approval is executed
    class PayInCents(BaseModel):
        amount: float = Field(gt=0)
        currency: str = "USD"

    tools = [replace(t, args=PayInCents) if t.name == "pay" else t for t in flow.task.tools]
    flow.task = replace(flow.task, tools=tools)
    (outcome,) = flow.execute_all()
    # Then nothing is paid, the approval is reported not run, and the task is told it expired
    assert outcome == "not run: pay's arguments changed since it was proposed"
    assert flow.effects.paid == []
    assert heard == [("expired", "the action changed in a newer version of the tool")]


def test_a_large_step_is_stored_compressed_and_read_back_as_written(aws: Aws, clock: Any) -> None:
    # Given a tool step carrying a long email (several KB of JSON) and a short model step
    runs = RunStore(aws.client("dynamodb"), aws.state_table, clock)
    run = runs.open("github#big", "test-task", "github#big")
    email = {"results": [{"text": "Hello, my order A-1042 arrived damaged. " * 120}]}
    runs.record(run, 1, "model", {"text": "hello"})
    runs.record(run, 1, "tools", email)
    # Then the long one is stored compressed under one write unit, marked with the schema that reads it
    big, small = (
        state_row(aws, "run#github#big", "step#001#tools"),
        state_row(aws, "run#github#big", "step#001#model"),
    )
    assert big is not None and small is not None
    assert "data" not in big and len(big["dataz"]["B"]) < 1024 < len(json.dumps(email))
    assert big["schema"] == {"N": str(COMPRESSED_STEP)} and small["schema"] == {"N": "1"}
    # And a replay reads both back exactly
    again = runs.get("github#big")
    assert again is not None and [s.data for s in again.steps] == [{"text": "hello"}, email]
