"""Approval rules on the exact version that runs, end to end on moto: the loop proposes, the page and
the recorder decide (an edit checked by the worker's own checks), the executor runs it once.

"Over $100 needs two people with the payments role; over $400 is refused" is one rule each in
the config, as a team writes it in lockgate.toml; a tool's Python hook adds what a threshold
cannot say, and can never loosen what the file says.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import replace
from typing import Any

import pytest

from lockgate import ApprovalRule, RunFacts
from lockgate.actions.ledger import Ledger
from lockgate.actions.responses import DecisionResponse
from lockgate.approvals.decisions import Choice, DecisionOutcome
from lockgate.approvals.events import approval_event
from lockgate.approvals.executor import EXPIRED_EVENT, ApprovalExecutor
from lockgate.approvals.versions import EditRefused
from lockgate.config import ApprovalsConfig, parse_config
from lockgate.inbox.queue import InboxQueue
from lockgate.inbox.routing import InboxEvent, TaskContext
from lockgate.inbox.store import InboxStore
from tests.agent.conftest import AgentRig
from tests.agent.test_approval_edits import editable_flow, post_edit, rows
from tests.agent.test_approvals import Approvals, decisions_table
from tests.support import LOG

RULES = """
[[approvals.reviewers]]
id = "alice"
roles = ["payments", "support"]
[[approvals.reviewers]]
id = "bob"
roles = ["payments"]
[[approvals.reviewers]]
id = "carol"
roles = ["support"]

[approvals.tools.pay]
roles = ["payments", "support"]

[[approvals.tools.pay.rules]]
name = "payments over $100"
argument = "amount"
over = 100
reviewers_required = 2
roles = ["payments"]
why = "payments over $100 need two people from payments"

[[approvals.tools.pay.rules]]
name = "payments over $400"
argument = "amount"
over = 400
refuse = true
why = "finance makes these"
"""


def rules(text: str = RULES) -> ApprovalsConfig:
    return parse_config(tomllib.loads(text)).approvals


def stored(flow: Approvals, approval_id: str) -> Any:
    proposal = flow.proposals.get(approval_id)
    assert proposal is not None
    return proposal


def test_a_payment_over_the_threshold_needs_two_people_with_the_role_and_runs_once_after_both(
    rig: AgentRig,
) -> None:
    # Given the agent proposes paying $150
    flow = editable_flow(rig, rules())
    approval_id = flow.propose_payment(150)
    # Then the proposal says which rule applied, and only the payments reviewers get links
    proposal = stored(flow, approval_id)
    assert proposal.requirement.describe() == "2 reviewers with the role payments (rule: payments over $100)"
    assert "payments over $100 need two people from payments (rule: payments over $100)" in proposal.why
    assert sorted(flow.desk.links_for(proposal)) == ["alice", "bob"]
    page = flow.desk.show(approval_id, flow.link(approval_id, "alice"))
    assert "Approval rule: 2 reviewers with the role payments (rule: payments over $100)." in page.body
    # When alice approves, nothing runs yet: the page says what is still needed
    first = flow.approve(approval_id, "alice")
    assert first.status == 200 and "1 of 2 so far" in first.body
    assert flow.execute_all() == [] and flow.effects.paid == []
    # When bob approves too, it runs once
    assert flow.approve(approval_id, "bob").status == 200
    (outcome,) = flow.execute_all()
    assert "approved by alice, bob" in outcome and [p["amount"] for p in flow.effects.paid] == [150.0]


def test_a_payment_over_the_refusal_threshold_is_refused_and_never_proposed(rig: AgentRig) -> None:
    flow = editable_flow(rig, rules())
    # When the agent asks to pay $450 (within the tool's own $500 policy, past the file's $400 rule)
    with pytest.raises(ValueError):  # the rig finds no proposal: none was made
        flow.propose_payment(450)
    # Then the model was told why, and nothing was proposed or paid
    run = flow.rig.runs().get("github#d-1")
    assert run is not None
    (call,) = run.step(1, "tools").data["calls"]  # type: ignore[union-attr]
    assert call["check"] == "policy"
    assert call["reason"] == "Refused by approval rule: payments over $400: finance makes these"
    assert flow.effects.paid == [] and decisions_table(flow) == []


def test_an_edit_over_the_threshold_raises_what_it_needs_before_it_can_run(rig: AgentRig) -> None:
    # Given an $80 payment, which one reviewer may approve
    flow = editable_flow(rig, rules())
    approval_id = flow.propose_payment(80)
    assert stored(flow, approval_id).requirement.reviewers_required == 1
    # When alice edits it to $150 and approves her edit
    page = post_edit(flow, approval_id, "alice", amount="150")
    # Then her approval is recorded, but the edited version needs a second person from payments
    assert (
        page.status == 200
        and "needs 2 reviewers with the role payments (rule: payments over $100)" in page.body
    )
    version = rows(flow)["#v1"]
    assert (
        '"reviewers_required": 2' in version["requirement"]["S"] and version["summary"]["S"] == "pay $150.00"
    )
    assert flow.execute_all() == [] and flow.effects.paid == []
    # When bob approves the edited version, $150 runs once
    assert flow.approve(approval_id, "bob").status == 200
    (outcome,) = flow.execute_all()
    assert outcome.startswith("pay $150.00: SUCCEEDED (edited by alice, approved by alice, bob")


def test_an_edit_below_the_threshold_needs_only_one_person(rig: AgentRig) -> None:
    flow = editable_flow(rig, rules())
    approval_id = flow.propose_payment(150)
    # When alice edits the $150 payment down to $80
    page = post_edit(flow, approval_id, "alice", amount="80")
    # Then her approval alone settles it, and $80 runs
    assert page.status == 200 and "Approved" in page.body and "pay $80.00" in page.body
    (outcome,) = flow.execute_all()
    assert outcome.startswith("pay $80.00: SUCCEEDED") and [p["amount"] for p in flow.effects.paid] == [80.0]


def test_an_edit_past_the_refusal_threshold_is_refused_when_it_is_made(rig: AgentRig) -> None:
    flow = editable_flow(rig, rules())
    approval_id = flow.propose_payment(150)
    page = post_edit(flow, approval_id, "alice", amount="450")
    assert (
        page.status == 422
        and "refused by approval rule: payments over $400: finance makes these" in page.body
    )
    assert decisions_table(flow) == [] and "#v1" not in rows(flow)


def test_a_reviewer_without_the_rules_role_cannot_make_an_edit_only_others_may_approve(rig: AgentRig) -> None:
    # Given an $80 payment carol (support) may approve
    flow = editable_flow(rig, rules())
    approval_id = flow.propose_payment(80)
    proposal = stored(flow, approval_id)
    # When carol edits it to $150, which needs the payments role
    with pytest.raises(
        EditRefused, match="as edited it needs 2 reviewers with the role payments.*carol may not"
    ):
        flow.desk.recorder.record(proposal, "carol", Choice.APPROVE, "cli", edit={"amount": "150"})
    # Then nothing was recorded
    assert decisions_table(flow) == []


def test_a_tools_hook_adds_a_rule_and_the_file_still_holds(rig: AgentRig) -> None:
    # Given a hook that asks for three people when the payee is new (a fact from our own systems)
    def new_payee(args: Any, facts: RunFacts) -> ApprovalRule | None:
        return ApprovalRule("new payee", reviewers_required=3) if facts.get("owner") else None

    text = RULES + '[[approvals.reviewers]]\nid = "dave"\nroles = ["payments"]\n'
    flow = editable_flow(rig, rules(text))
    flow.task = replace(
        flow.task,
        tools=[replace(t, approval_rules=new_payee) if t.name == "pay" else t for t in flow.task.tools],
    )
    approval_id = flow.propose_payment(150)
    # Then the proposal needs three people, with the file's role: the hook added, it did not loosen
    requirement = stored(flow, approval_id).requirement
    assert (requirement.reviewers_required, requirement.roles) == (3, ("payments",))
    assert requirement.applied == ("payments over $100", "new payee")
    for who in ("alice", "bob"):
        assert flow.approve(approval_id, who).status == 200
    assert flow.execute_all() == []
    assert flow.approve(approval_id, "dave").status == 200
    (outcome,) = flow.execute_all()
    assert "approved by alice, bob, dave" in outcome


def test_when_a_hooks_rule_asks_for_more_by_the_time_it_runs_the_worker_does_not_run_it(
    rig: AgentRig,
) -> None:
    # Given a payment one reviewer approved while the hook asked for nobody more
    watched = {"on": False}

    def watchlist(args: Any, facts: RunFacts) -> ApprovalRule | None:
        return ApprovalRule("payee on the watchlist", reviewers_required=2) if watched["on"] else None

    flow = editable_flow(rig, rules())
    flow.task = replace(
        flow.task,
        tools=[replace(t, approval_rules=watchlist) if t.name == "pay" else t for t in flow.task.tools],
    )
    approval_id = flow.propose_payment(80)
    assert flow.approve(approval_id, "alice").status == 200
    # When the payee is put on the watchlist before the worker runs it
    watched["on"] = True
    # Then the worker's last check refuses it: one approval is not enough any more
    (outcome,) = flow.execute_all()
    assert outcome.startswith("not run: it now needs 2 reviewers") and flow.effects.paid == []


def test_the_recorded_outcome_of_an_edit_that_settles_it_is_approved(rig: AgentRig) -> None:
    flow = editable_flow(rig, rules())
    approval_id = flow.propose_payment(150)
    outcome = flow.desk.recorder.record(
        stored(flow, approval_id), "bob", Choice.APPROVE, "cli", edit={"amount": "60"}
    )
    assert outcome is DecisionOutcome.APPROVED


def test_a_request_nobody_decided_comes_back_to_a_run_that_responds_as_expired(rig: AgentRig) -> None:
    # Given a task that hears its decisions in its run, and a payment nobody decides
    flow = editable_flow(rig, rules())
    flow.task = replace(flow.task, respond=True)
    db = rig.aws.client("dynamodb")
    inbox = InboxStore(db, rig.aws.inbox_table)
    flow.executor = ApprovalExecutor(
        proposals=flow.proposals,
        decisions=flow.decisions,
        tasks=flow.tasks,
        ledger=Ledger(db, rig.aws.state_table, rig.clock),
        config=flow.config,
        clock=rig.clock,
        log=LOG,
        metrics=rig.metrics,
        inbox=inbox,
        queue=InboxQueue(rig.aws.client("sqs"), rig.aws.queue_url),
    )
    approval_id = flow.propose_payment(80)
    # When its decision window passes and the expire job's event reaches the worker
    rig.clock.advance(25 * 3600)
    expired = approval_event(approval_id, EXPIRED_EVENT, int(rig.clock.now()))
    context = TaskContext("x", lambda: 60.0, None, LOG, rig.metrics)  # type: ignore[arg-type]
    assert (
        flow.executor(InboxEvent(expired, expired.body or b""), context)
        == "not run: expired: nobody decided in time"
    )
    # Then the run that proposed it is resumed with "expired", and nothing was paid
    (resumed,) = [e for e in flow.queued_events() if e.delivery.source == "run"]
    told = json.loads(resumed.body)
    assert (told["outcome"], told["reason"], told["approval_id"]) == (
        "expired",
        "nobody decided in time",
        approval_id,
    )
    assert DecisionResponse.from_json(told).tool_result()["decision"] == "expired"
    assert flow.effects.paid == []


def test_a_task_that_does_not_respond_hears_the_edited_version_that_ran(rig: AgentRig) -> None:
    # Given a task told of decisions through on_decision (e.g. to email the customer)
    heard: list[tuple[str, str]] = []
    flow = editable_flow(rig, rules())
    flow.task = replace(
        flow.task, on_decision=lambda notice, services: heard.append((notice.outcome, notice.summary))
    )
    approval_id = flow.propose_payment(150)
    # When alice approves it changed to $60, and it runs
    assert post_edit(flow, approval_id, "alice", amount="60").status == 200
    flow.execute_all()
    # Then the task hears the version that ran, not the one proposed
    assert heard == [("done", "pay $60.00")]
