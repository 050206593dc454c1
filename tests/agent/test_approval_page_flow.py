"""The complete approval page end to end on moto: a rejection's reason reaches the Decisions row and
the other reviewer's page; a decided link shows who decided, when, and what the ledger says happened.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from lockgate.approvals.decisions import MAX_REASON_CHARS
from lockgate.config import ToolApproval
from lockgate.errors import Deferred
from tests.agent.conftest import AgentRig
from tests.agent.test_approvals import CONFIG, Approvals, decisions_table
from tests.agent.toolkit import Effects

TWO_PERSON = replace(CONFIG, tools={"pay": ToolApproval(roles=("payments",), reviewers_required=2)})


def post(flow: Approvals, approval_id: str, reviewer: str, decision: str, reason: str) -> object:
    query = flow.link(approval_id, reviewer)
    return flow.desk.decide(approval_id, query, {**flow.form(approval_id, query, decision), "reason": reason})


def test_a_rejection_reason_is_stored_and_shown_to_the_other_reviewer(rig: AgentRig) -> None:
    # Given a payment that needs alice and bob
    flow = Approvals(rig, Effects(), TWO_PERSON)
    approval_id = flow.propose_payment()
    first = flow.desk.show(approval_id, flow.link(approval_id, "alice"))
    assert "0 of 2 approvals so far." in first.body and "Who may decide: Alice (you), Bob." in first.body
    # When bob rejects it from his page with a reason (markup included)
    page = post(flow, approval_id, "bob", "reject", "  Duplicate of <b>last week's</b> payment\r\nsee #12 ")
    assert page.status == 200 and "Rejected" in page.body  # type: ignore[attr-defined]
    # Then the Decisions row holds the reason, trimmed, its line break kept
    (row,) = decisions_table(flow)
    assert (row["reviewer"]["S"], row["verdict"]["S"]) == ("bob", "reject")
    assert row["reason"]["S"] == "Duplicate of <b>last week's</b> payment\nsee #12"
    # And alice's link shows who rejected, when, and why, escaped; nothing ran
    shown = flow.desk.show(approval_id, flow.link(approval_id, "alice"))
    assert shown.status == 409 and "<h1>Already rejected</h1>" in shown.body
    assert "bob: <strong>reject</strong> at" in shown.body
    assert "Duplicate of &lt;b&gt;last week&#x27;s&lt;/b&gt; payment\nsee #12" in shown.body
    assert "Nothing ran, and nothing will." in shown.body
    assert flow.execute_all() and flow.effects.paid == []


def test_an_approval_keeps_no_reason_and_a_reason_too_long_decides_nothing(rig: AgentRig) -> None:
    flow = Approvals(rig, Effects(), TWO_PERSON)
    approval_id = flow.propose_payment()
    # a crafted post past the textarea's limit: the neutral refusal, and no decision
    refused = post(flow, approval_id, "bob", "reject", "x" * (MAX_REASON_CHARS + 1))
    assert refused.status == 403 and decisions_table(flow) == []  # type: ignore[attr-defined]
    # a reason sent with Approve is not kept: only a rejection carries one
    post(flow, approval_id, "bob", "approve", "looks fine")
    (row,) = decisions_table(flow)
    assert row["verdict"]["S"] == "approve" and "reason" not in row
    # and bob's own link shows his decision and the progress, with no form
    again = flow.desk.show(approval_id, flow.link(approval_id, "bob"))
    assert again.status == 409 and "You already decided: <strong>approve</strong>" in again.body
    assert "1 of 2 approvals so far." in again.body and "<form" not in again.body


def test_after_the_worker_runs_an_approved_payment_the_decided_link_says_it_ran(rig: AgentRig) -> None:
    # Given alice approved a payment
    flow = Approvals(rig, Effects())
    approval_id = flow.propose_payment()
    assert "Approved" in flow.approve(approval_id, "alice").body
    link = flow.link(approval_id, "alice")
    before = flow.desk.show(approval_id, link)
    assert "Not run yet" in before.body and flow.effects.paid == []
    # When the worker executes it
    flow.execute_all()
    assert len(flow.effects.paid) == 1
    # Then her link (and bob's) shows who approved, when, and that it ran, with the ledger's time
    for reviewer in ("alice", "bob"):
        page = flow.desk.show(approval_id, flow.link(approval_id, reviewer))
        assert page.status == 409 and "<h1>Already approved</h1>" in page.body
        assert "alice: <strong>approve</strong> at" in page.body
        assert "It ran at " in page.body


def test_an_outcome_the_ledger_cannot_tell_shows_waiting_for_reconciliation(rig: AgentRig) -> None:
    # Given an approved payment whose provider timed out after sending (the ledger says UNKNOWN)
    effects = Effects()
    effects.pay_fails_unknown = True
    flow = Approvals(rig, effects)
    approval_id = flow.propose_payment()
    flow.approve(approval_id, "alice")
    with pytest.raises(Deferred):
        flow.execute_all()
    # Then the decided link says it is waiting for reconciliation, not that it ran or failed
    page = flow.desk.show(approval_id, flow.link(approval_id, "alice"))
    assert "Waiting for reconciliation (since " in page.body
    assert "It ran" not in page.body and "failed" not in page.body
