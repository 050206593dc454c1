"""Edit and approve: a reviewer approves a changed call as a new version; it runs once, as edited.

On moto, through the page's POST and the recorder the CLI uses; the worker's executor runs it.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import pytest

from lockgate.actions.facts import RunFacts
from lockgate.actions.tools import Tool, Verdict
from lockgate.approvals.decisions import Choice, DecisionOutcome
from lockgate.approvals.refusals import RefusalLog
from lockgate.approvals.versions import EditRefused
from lockgate.config import ApprovalsConfig, ToolApproval
from tests.agent.conftest import AgentRig
from tests.agent.test_approvals import CONFIG, Approvals, decisions_table
from tests.agent.toolkit import Effects, make_task, make_tools
from tests.support import LOG

TWO_PERSON = ApprovalsConfig(
    reviewers=CONFIG.reviewers, tools={"pay": ToolApproval(roles=("payments",), reviewers_required=2)}
)


def at_most_500(args: Any, facts: RunFacts) -> Verdict:
    return Verdict.deny("payments are at most $500") if args.amount > 500 else Verdict.allow()


def editable_flow(rig: AgentRig, config: ApprovalsConfig = CONFIG) -> Approvals:
    """The approvals rig with ``pay`` editable (amount) and capped at $500 by a hard policy."""
    effects = Effects()
    tools: list[Tool[Any]] = [
        replace(t, editable=("amount",), policies=(at_most_500,)) if t.name == "pay" else t
        for t in make_tools(effects)
    ]
    flow = Approvals(rig, effects, config)
    flow.task = make_task(effects, tools=tools)
    return flow


def edit_form(flow: Approvals, approval_id: str, reviewer: str, **changes: str) -> dict[str, str]:
    """What the browser posts from "Approve with these changes"."""
    query = flow.link(approval_id, reviewer)
    page = flow.desk.show(approval_id, query)
    assert re.search(r'name="seen" value="[0-9a-f]{64}"', page.body), page.body
    return {**flow.form(approval_id, query, "edit"), **{f"edit.{k}": v for k, v in changes.items()}}


def post_edit(flow: Approvals, approval_id: str, reviewer: str, **changes: str) -> Any:
    query = flow.link(approval_id, reviewer)
    return flow.desk.decide(approval_id, query, edit_form(flow, approval_id, reviewer, **changes))


def rows(flow: Approvals) -> dict[str, dict[str, Any]]:
    """Every Decisions item of the test's proposals, by sort key (decisions, versions, #state)."""
    table = flow.rig.aws.names["DecisionsTable"]
    items = flow.rig.aws.client("dynamodb").scan(TableName=table, ConsistentRead=True)["Items"]
    return {i["reviewer"]["S"]: i for i in items}


def test_a_reviewer_approves_a_smaller_refund_and_exactly_the_edited_amount_is_paid_once(
    rig: AgentRig,
) -> None:
    # Given a payment of $80 waiting for a person, with the amount editable
    flow = editable_flow(rig)
    approval_id = flow.propose_payment(80)
    page = flow.desk.show(approval_id, flow.link(approval_id, "alice"))
    assert "Change it before approving" in page.body and 'name="edit.amount" value="80.0"' in page.body
    # When alice approves it with the amount changed to 40
    done = post_edit(flow, approval_id, "alice", amount="40")
    # Then the edit is version 1, her approval counts for it, and it settled the proposal
    assert done.status == 200 and "Approved" in done.body
    stored = rows(flow)
    assert stored["#v1"]["editor"]["S"] == "alice" and '"amount": 40.0' in stored["#v1"]["args"]["S"]
    assert stored["alice#v1"]["verdict"]["S"] == "approve" and stored["alice#v1"]["version"]["N"] == "1"
    assert stored["#state"]["state"]["S"] == "approved" and stored["#state"]["version"]["N"] == "1"
    # And the worker pays $40, not $80, once, however often the event comes
    (outcome,) = flow.execute_all()
    assert outcome.startswith("pay $40.00: SUCCEEDED (edited by alice, approved by alice")
    assert [p["amount"] for p in flow.effects.paid] == [40.0]
    context_events = flow.queued_events()
    assert context_events == []  # one event, handled
    # And the page now shows what was changed, by whom
    after = flow.desk.show(approval_id, flow.link(approval_id, "bob"))
    assert (
        after.status == 409
        and "Already approved" in after.body
        and "<del>80.0</del> → <ins>40.0</ins>" in after.body
    )
    # And what ran is the edited call, under the key the worker's check gave it
    assert "<strong>pay $40.00</strong>" in after.body and "It ran at" in after.body


def test_an_edit_needs_the_other_reviewer_again_and_earlier_approvals_do_not_carry_over(
    rig: AgentRig,
) -> None:
    # Given a two-person payment that alice approved as proposed
    flow = editable_flow(rig, TWO_PERSON)
    approval_id = flow.propose_payment(80)
    assert flow.approve(approval_id, "alice").status == 200
    # When bob approves it with the amount changed
    assert post_edit(flow, approval_id, "bob", amount="60").status == 200
    # Then it still waits: alice approved $80, not $60, and nothing ran
    assert flow.execute_all() == [] and flow.effects.paid == []
    page = flow.desk.show(approval_id, flow.link(approval_id, "alice"))
    assert "Changed by a reviewer" in page.body and "<del>80.0</del> → <ins>60.0</ins>" in page.body
    assert "1 of 2 approvals so far." in page.body
    # And an approval posted from a page opened before the edit is refused and records nothing
    stale = dict(flow.form(approval_id, flow.link(approval_id, "alice"), "approve"))
    stale["seen"] = rows(flow)["alice"]["digest"]["S"]  # the fingerprint of $80
    before = len(decisions_table(flow))
    refused = flow.desk.decide(approval_id, flow.link(approval_id, "alice"), stale)
    assert refused.status == 409 and "Changed since you looked" in refused.body
    assert len(decisions_table(flow)) == before
    # When alice approves the edited version from a fresh page
    assert flow.approve(approval_id, "alice").status == 200
    # Then $60 is paid once
    (outcome,) = flow.execute_all()
    assert "approved by alice, bob" in outcome and [p["amount"] for p in flow.effects.paid] == [60.0]


def test_an_edit_the_hard_policy_refuses_is_refused_when_made_and_kept_as_a_refusal(rig: AgentRig) -> None:
    # Given a payment waiting for a person
    flow = editable_flow(rig)
    approval_id = flow.propose_payment(80)
    db, table = flow.rig.aws.client("dynamodb"), flow.rig.aws.names["DecisionsTable"]
    flow.desk.refusals = RefusalLog(db, table, flow.rig.clock, LOG, flow.rig.metrics)  # as deployed
    # When a reviewer raises it above what the tool's policy allows
    page = post_edit(flow, approval_id, "alice", amount="900")
    # Then the worker's check refuses it at once, saying why, and nothing is recorded but the refusal
    assert (
        page.status == 422
        and "payments are at most $500" in page.body
        and "Nothing was recorded" in page.body
    )
    stored = rows(flow)
    assert not [k for k in stored if k.startswith("#v") or k == "alice#v1" or k == "#state"]
    (refusal,) = [i for k, i in stored.items() if k.startswith("refused#")]
    assert (refusal["channel"]["S"], refusal["why"]["S"]) == ("link", "edit-refused")
    assert flow.execute_all() == [] and flow.effects.paid == []


def test_an_edit_that_passed_is_still_refused_by_the_worker_if_the_facts_changed_before_it_ran(
    rig: AgentRig,
) -> None:
    # Given an edit within the policy's limit, approved
    limit = {"max": 500}

    def within_limit(args: Any, facts: RunFacts) -> Verdict:
        return (
            Verdict.deny(f"payments are at most ${limit['max']}")
            if args.amount > limit["max"]
            else Verdict.allow()
        )

    flow = editable_flow(rig)
    flow.task = replace(
        flow.task,
        tools=[replace(t, policies=(within_limit,)) if t.name == "pay" else t for t in flow.task.tools],
    )
    approval_id = flow.propose_payment(80)
    assert post_edit(flow, approval_id, "alice", amount="300").status == 200
    # When the limit drops before the worker runs it
    limit["max"] = 100
    # Then the worker's own check, the last line, refuses it and nothing is paid
    (outcome,) = flow.execute_all()
    assert outcome == "not run: refused by policy: payments are at most $100" and flow.effects.paid == []


@pytest.mark.parametrize(
    ("changes", "why"),
    [
        ({"amount": "-5"}, "amount: more than 0"),
        ({"amount": "forty"}, "amount: a plain number"),
        ({"amount": "80.0"}, "the edit changes nothing"),
        ({"owner": "x"}, "owner cannot be edited"),
        ({}, "no field was changed"),
    ],
)
def test_an_invalid_edit_is_refused_and_writes_nothing(
    rig: AgentRig, changes: dict[str, str], why: str
) -> None:
    flow = editable_flow(rig)
    approval_id = flow.propose_payment(80)
    proposal = flow.proposals.get(approval_id)
    assert proposal is not None
    with pytest.raises(EditRefused, match=why):
        flow.desk.recorder.record(proposal, "alice", Choice.APPROVE, "cli", edit=changes)
    assert rows(flow) == {} and flow.queued_events() == []


def test_a_tool_without_editable_fields_cannot_be_edited(rig: AgentRig) -> None:
    flow = Approvals(rig, Effects())  # pay is not editable here
    approval_id = flow.propose_payment(80)
    proposal = flow.proposals.get(approval_id)
    assert (
        proposal is not None
        and "edit." not in flow.desk.show(approval_id, flow.link(approval_id, "alice")).body
    )
    with pytest.raises(EditRefused, match="pay cannot be edited"):
        flow.desk.recorder.record(proposal, "alice", Choice.APPROVE, "cli", edit={"amount": "40"})
    refused = flow.desk.decide(
        approval_id,
        flow.link(approval_id, "alice"),
        {**flow.form(approval_id, flow.link(approval_id, "alice"), "edit"), "edit.amount": "40"},
    )
    assert refused.status == 422 and rows(flow) == {}


def test_a_rejection_cannot_carry_an_edit(rig: AgentRig) -> None:
    flow = editable_flow(rig)
    proposal = flow.proposals.get(flow.propose_payment(80))
    assert proposal is not None
    with pytest.raises(ValueError, match="cannot be a rejection"):
        flow.desk.recorder.record(proposal, "alice", Choice.REJECT, "cli", edit={"amount": "40"})
    assert flow.desk.recorder.record(proposal, "alice", Choice.REJECT, "cli") is DecisionOutcome.REJECTED
