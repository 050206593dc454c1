"""A decision refused after its link verified is kept: who, which request, why, through the link."""

from __future__ import annotations

from lockgate.approvals.refusals import Refusal, RefusalLog, Why
from tests.agent.conftest import AgentRig
from tests.agent.test_approval_edits import edit_form, editable_flow
from tests.agent.test_approvals import Approvals, decisions_table
from tests.agent.toolkit import Effects
from tests.support import LOG


def kept(flow: Approvals, approval_id: str) -> list[Refusal]:
    db = flow.rig.aws.client("dynamodb")
    return RefusalLog(
        db, flow.rig.aws.names["DecisionsTable"], flow.rig.clock, LOG, flow.rig.metrics
    ).for_approval(approval_id)


def with_refusals(flow: Approvals) -> Approvals:
    db = flow.rig.aws.client("dynamodb")
    flow.desk.refusals = RefusalLog(
        db, flow.rig.aws.names["DecisionsTable"], flow.rig.clock, LOG, flow.rig.metrics
    )
    return flow


def test_a_second_post_of_a_settled_request_is_refused_and_kept_as_a_row(rig: AgentRig) -> None:
    # Given alice's approval settled the payment, and bob's page opened before it
    flow = with_refusals(Approvals(rig, Effects()))
    approval_id = flow.propose_payment(80)
    query = flow.link(approval_id, "bob")
    late = flow.form(approval_id, query, "reject")
    assert flow.approve(approval_id, "alice").status == 200
    # When bob posts his rejection, and alice posts her approval again
    assert flow.desk.decide(approval_id, query, late).status == 409
    again = flow.link(approval_id, "alice")
    assert flow.desk.decide(approval_id, again, {**late, **again}).status in (403, 409)
    # Then nothing was decided by either, and each refused post is a row with who and why
    assert [d["reviewer"]["S"] for d in decisions_table(flow)] == ["alice"]
    rows = kept(flow, approval_id)
    assert ("link", "bob", Why.SETTLED) in [(r.channel, r.who, r.why) for r in rows]
    assert flow.rig.metrics.totals["ApprovalClickRefused"] == len(rows) >= 1


def test_an_approval_from_a_page_shown_before_an_edit_is_kept_as_edited(rig: AgentRig) -> None:
    flow = with_refusals(editable_flow(rig))
    approval_id = flow.propose_payment(80)
    bob = (flow.link(approval_id, "bob"), flow.form(approval_id, flow.link(approval_id, "bob"), "approve"))
    flow.desk.decide(
        approval_id, flow.link(approval_id, "alice"), edit_form(flow, approval_id, "alice", amount="60")
    )
    assert flow.desk.decide(approval_id, *bob).status == 409
    assert [(r.who, r.why) for r in kept(flow, approval_id)] == [("bob", Why.SETTLED)]
