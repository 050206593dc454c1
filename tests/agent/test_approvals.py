"""Approvals end to end on moto: propose → signed link → page → decision → execute once."""

from __future__ import annotations

import json
import threading
from dataclasses import replace
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest

from lockgate.actions.ledger import Ledger
from lockgate.approvals.decisions import DecisionStore
from lockgate.approvals.desk import ApprovalDesk
from lockgate.approvals.executor import ApprovalExecutor
from lockgate.approvals.limits import PendingLimits
from lockgate.approvals.outcome import ActionOutcomes
from lockgate.approvals.pages import FORM_TOKEN_FIELD
from lockgate.approvals.proposals import ProposalStore
from lockgate.approvals.requests import ApprovalRequests
from lockgate.approvals.version_checks import VersionChecks
from lockgate.config import ApprovalsConfig, Reviewer, ToolApproval
from lockgate.errors import Deferred
from lockgate.inbox.bodies import BodyStore
from lockgate.inbox.queue import InboxQueue
from lockgate.inbox.routing import InboxEvent, TaskContext
from lockgate.inbox.store import InboxStore
from lockgate_infra.stub.models import Scripted
from lockgate_infra.stub.replies import Reply
from tests.agent.conftest import AgentRig, event
from tests.agent.test_loop import DEADLINE, say, tools_turn, use
from tests.agent.toolkit import Effects, make_task
from tests.support import LOG, race

SECRET = b"approval-link-secret-for-tests-0123456789"
CONFIG = ApprovalsConfig(
    reviewers=(
        Reviewer("alice", "Alice", ("payments",)),
        Reviewer("bob", "Bob", ("payments",)),
        Reviewer("carol", "Carol", ("support",)),
    ),
    tools={"pay": ToolApproval(roles=("payments",))},
)


class Approvals:
    """The approval side and the worker side, wired to the same moto account."""

    def __init__(
        self, rig: AgentRig, effects: Effects, config: ApprovalsConfig = CONFIG, log: Any = LOG
    ) -> None:
        self.rig, self.effects, self.config = rig, effects, config
        db = rig.aws.client("dynamodb")
        self.proposals = ProposalStore(db, rig.aws.names["ApprovalsTable"])
        self.decisions = DecisionStore(db, rig.aws.names["DecisionsTable"])
        self.limits = PendingLimits(db, rig.aws.names["ApprovalsTable"], rig.aws.state_table, config)
        self.tasks: dict[str, Any] = {}  # the worker's tasks: its executor and its version checks read them
        self.task = make_task(effects)
        self.desk = ApprovalDesk(
            proposals=self.proposals,
            decisions=self.decisions,
            config=config,
            link_secrets=lambda: [SECRET],
            inbox=InboxStore(db, rig.aws.inbox_table),
            queue=InboxQueue(rig.aws.client("sqs"), rig.aws.queue_url),
            clock=rig.clock,
            log=log,
            metrics=rig.metrics,
            base_url="https://example.test/approvals",
            outcomes=ActionOutcomes(db, rig.aws.state_table),
            # What the deployed callback asks the worker (over Lambda): would this edited version run?
            checks=VersionChecks(self.tasks, config, self.proposals),
        )
        self.executor = ApprovalExecutor(
            proposals=self.proposals,
            decisions=self.decisions,
            tasks=self.tasks,
            ledger=Ledger(db, rig.aws.state_table, rig.clock),
            config=config,
            clock=rig.clock,
            log=LOG,
            metrics=rig.metrics,
            limits=self.limits,
        )

    @property
    def task(self) -> Any:
        """The worker's task (setting it gives the executor and the version checks the same one)."""
        return self._task

    @task.setter
    def task(self, task: Any) -> None:
        self._task = task
        self.tasks.clear()
        self.tasks[task.name] = task

    def propose_payment(self, amount: float = 80, delivery: str = "d-1") -> str:
        """The agent asks to pay; returns the approval id."""
        self.rig.stub.set_model(
            Scripted([tools_turn(use("t1", "pay", {"amount": amount})), Reply([say("Passed to the team.")])])
        )
        loop = self.rig.loop(
            {
                "approvals": ApprovalRequests(
                    self.config, self.rig.clock, LOG, self.rig.metrics, limits=self.limits
                ),
                "rules": self.config,  # [approvals]' rules, as the worker's loop reads them
            }
        )
        loop.run(self.task, event(delivery), DEADLINE)
        (item,) = [
            i
            for i in self.rig.aws.client("dynamodb").scan(TableName=self.rig.aws.names["ApprovalsTable"])[
                "Items"
            ]
            if i["run_id"]["S"] == f"github#{delivery}"
        ]
        return str(item["approval_id"]["S"])

    def link(self, approval_id: str, reviewer: str) -> dict[str, str]:
        proposal = self.proposals.get(approval_id)
        assert proposal is not None
        url = self.desk.links_for(proposal)[reviewer]
        return dict(parse_qsl(urlsplit(url).query))

    def form(self, approval_id: str, query: dict[str, str], decision: str) -> dict[str, str]:
        """What the browser posts: the hidden fields of the page the link shows."""
        page = self.desk.show(approval_id, query)
        assert page.status == 200, page.body
        token = page.body.split(f'name="{FORM_TOKEN_FIELD}" value="', 1)[1].split('"', 1)[0]
        seen = page.body.split('name="seen" value="', 1)[1].split('"', 1)[0]  # the version it showed
        return {**query, FORM_TOKEN_FIELD: token, "seen": seen, "decision": decision}

    def approve(self, approval_id: str, reviewer: str, decision: str = "approve") -> Any:
        query = self.link(approval_id, reviewer)
        return self.desk.decide(approval_id, query, self.form(approval_id, query, decision))

    def queued_events(self) -> list[InboxEvent]:
        """The decision events the desk stored, as the worker would see them."""
        store = InboxStore(self.rig.aws.client("dynamodb"), self.rig.aws.inbox_table)
        bodies = BodyStore(self.rig.aws.client("s3"), self.rig.aws.bucket)
        events = []
        for message in self.rig.aws.drain(self.rig.aws.queue_url):
            delivery = store.get(json.loads(message["Body"])["pk"])
            events.append(InboxEvent(delivery, delivery.body or bodies.get(delivery.body_ref or "")))
        return events

    def execute_all(self) -> list[str]:
        context = TaskContext("x", lambda: 60.0, None, LOG, self.rig.metrics)  # type: ignore[arg-type]
        return [self.executor(e, context) for e in self.queued_events()]


@pytest.fixture
def flow(rig: AgentRig) -> Approvals:
    return Approvals(rig, Effects())


def decisions_table(flow: Approvals) -> list[dict[str, Any]]:
    """The reviewers' decision rows (the table also holds each proposal's #state and versions)."""
    items = flow.rig.aws.client("dynamodb").scan(TableName=flow.rig.aws.names["DecisionsTable"])["Items"]
    return [i for i in items if "verdict" in i]


def test_a_protected_call_pauses_as_a_proposal_with_no_side_effect(flow: Approvals) -> None:
    approval_id = flow.propose_payment()
    proposal = flow.proposals.get(approval_id)
    assert proposal is not None and flow.effects.paid == []
    assert proposal.summary == "pay $80.00" and proposal.unverified_reason == "Working on it."
    assert proposal.why == ("payments over $50 need a person",)
    assert proposal.expires_at - proposal.created_at == 24 * 3600
    last = flow.rig.stub.requests[-1]["messages"][-1]["content"][0]["content"]
    assert last.startswith("NOT DONE YET: pay is waiting for a person's approval")
    assert "https://" not in last and "approvals" not in last  # no link or token ever reaches the model


def test_the_right_reviewer_approves_and_it_runs_exactly_once(flow: Approvals) -> None:
    approval_id = flow.propose_payment()
    query = flow.link(approval_id, "alice")
    # GET alone decides nothing (mail scanners and unfurlers open links)
    for _ in range(3):
        assert flow.desk.show(approval_id, query).status == 200
    assert decisions_table(flow) == [] and flow.queued_events() == []
    form = flow.form(approval_id, query, "approve")
    page = flow.desk.decide(approval_id, query, form)
    assert page.status == 200 and "Approved" in page.body
    (outcome,) = flow.execute_all()
    assert flow.effects.paid == [{"amount": 80.0, "key": flow.effects.paid[0]["key"]}]
    assert "SUCCEEDED (approved by alice" in outcome
    # a second click changes nothing and nothing runs twice
    assert flow.desk.decide(approval_id, query, form).status == 409
    assert flow.execute_all() == [] and len(flow.effects.paid) == 1


def test_a_rejected_action_never_runs(flow: Approvals) -> None:
    approval_id = flow.propose_payment()
    assert "Rejected" in flow.approve(approval_id, "bob", "reject").body
    (outcome,) = flow.execute_all()
    assert outcome.startswith("not run: rejected by bob") and flow.effects.paid == []


@pytest.mark.parametrize(
    "tamper",
    ["forged", "fabricated id", "tampered digest", "wrong reviewer", "reviewer not allowed", "expired link"],
)
def test_bad_links_get_a_clear_page_and_change_nothing(flow: Approvals, tamper: str) -> None:
    approval_id = flow.propose_payment()
    query = flow.link(approval_id, "alice")
    target = approval_id
    if tamper == "forged":
        query["s"] = query["s"][::-1]
    elif tamper == "fabricated id":
        target = "ap_" + "0" * 24
    elif tamper == "tampered digest":
        query["d"] = "0" * 64
    elif tamper == "wrong reviewer":
        query["r"] = "bob"
    elif tamper == "reviewer not allowed":  # a genuinely signed link, for a reviewer without the role
        proposal = flow.proposals.get(approval_id)
        assert proposal is not None
        query = dict(parse_qsl(urlsplit(flow.desk.signer.link_for(proposal, "carol")).query))
    elif tamper == "expired link":
        flow.rig.clock.advance(25 * 3600)
    form = {**query, FORM_TOKEN_FIELD: "x" * 43, "decision": "approve"}
    assert flow.desk.show(target, query).status >= 400
    assert flow.desk.decide(target, query, form).status >= 400
    assert decisions_table(flow) == [] and flow.execute_all() == [] and flow.effects.paid == []


def test_a_changed_proposal_cannot_be_approved(flow: Approvals) -> None:
    approval_id = flow.propose_payment()
    query = flow.link(approval_id, "alice")
    form = flow.form(approval_id, query, "approve")
    db = flow.rig.aws.client("dynamodb")
    db.update_item(
        TableName=flow.rig.aws.names["ApprovalsTable"],
        Key={"approval_id": {"S": approval_id}},
        UpdateExpression="SET args = :a",
        ExpressionAttributeValues={":a": {"S": '{"amount": 8000}'}},
    )
    assert flow.desk.decide(approval_id, query, form).status == 403  # the neutral page
    assert decisions_table(flow) == [] and flow.effects.paid == []


def test_a_form_token_from_another_link_is_refused(flow: Approvals) -> None:
    approval_id = flow.propose_payment()
    bob_form = flow.form(approval_id, flow.link(approval_id, "bob"), "approve")
    alice_query = flow.link(approval_id, "alice")
    assert (
        flow.desk.decide(
            approval_id,
            alice_query,
            {**alice_query, FORM_TOKEN_FIELD: bob_form[FORM_TOKEN_FIELD], "decision": "approve"},
        ).status
        == 403
    )
    assert decisions_table(flow) == []


def test_an_expired_proposal_and_a_late_execution_do_not_run(flow: Approvals) -> None:
    approval_id = flow.propose_payment()
    flow.approve(approval_id, "alice")
    flow.rig.clock.advance(3601)  # approved, but not run within the hour
    (outcome,) = flow.execute_all()
    assert outcome == "not run: approved too long ago: the run window has passed" and flow.effects.paid == []
    other = flow.propose_payment(delivery="d-2")
    query = flow.link(other, "alice")
    flow.rig.clock.advance(24 * 3600 + 1)  # nobody decided in time
    assert flow.desk.show(other, query).status == 403  # the neutral page: the link expired with it
    assert flow.effects.paid == []


def test_two_concurrent_posts_and_executions_give_one_decision_and_one_effect(flow: Approvals) -> None:
    approval_id = flow.propose_payment()
    query = flow.link(approval_id, "alice")
    form = flow.form(approval_id, query, "approve")
    statuses: list[int] = []
    barrier = threading.Barrier(2)

    def post() -> None:
        barrier.wait()
        statuses.append(flow.desk.decide(approval_id, query, form).status)

    race([post] * 2)
    assert sorted(statuses) == [200, 409] and len(decisions_table(flow)) == 1
    events = flow.queued_events()
    assert len(events) == 1
    context = TaskContext("x", lambda: 60.0, None, LOG, flow.rig.metrics)  # type: ignore[arg-type]
    outcomes: list[str] = []

    def execute() -> None:
        from lockgate.errors import Deferred

        try:
            outcomes.append(flow.executor(events[0], context))
        except Deferred:  # the other execution holds the ledger entry: this one waits, as the worker would
            outcomes.append("deferred")

    race([execute] * 2)
    assert len(flow.effects.paid) == 1 and len(outcomes) == 2


def test_a_high_stakes_tool_needs_two_different_people(rig: AgentRig) -> None:
    effects = Effects()
    flow = Approvals(rig, effects)
    tools = [replace(t, high_stakes=True) if t.name == "pay" else t for t in flow.task.tools]
    flow.task = replace(flow.task, tools=tools)
    approval_id = flow.propose_payment()
    query = flow.link(approval_id, "alice")
    form = flow.form(approval_id, query, "approve")
    assert "Another reviewer must also approve" in flow.desk.decide(approval_id, query, form).body
    assert flow.desk.decide(approval_id, query, form).status == 409  # the same person cannot count twice
    assert flow.execute_all() == [] and effects.paid == []
    assert "Approved" in flow.approve(approval_id, "bob").body
    (outcome,) = flow.execute_all()
    assert "approved by alice, bob" in outcome and len(effects.paid) == 1


def test_policy_is_rechecked_against_current_facts_at_execution(rig: AgentRig) -> None:
    from lockgate.actions.facts import RunFacts
    from lockgate.actions.tools import Verdict

    effects = Effects()
    flow = Approvals(rig, effects)
    budget = {"left": 100.0}  # a fact from "our own systems", read when checked

    def within_budget(args: Any, facts: RunFacts) -> Verdict:
        return Verdict.allow() if args.amount <= budget["left"] else Verdict.deny("over the remaining budget")

    tools = [replace(t, policies=(within_budget,)) if t.name == "pay" else t for t in flow.task.tools]
    flow.task = replace(flow.task, tools=tools)
    approval_id = flow.propose_payment()
    flow.approve(approval_id, "alice")
    budget["left"] = 50.0  # the facts changed between approval and execution
    (outcome,) = flow.execute_all()
    assert outcome == "not run: refused by policy: over the remaining budget" and effects.paid == []


def test_the_task_hears_about_a_rejection_once(rig: AgentRig) -> None:
    heard: list[tuple[str, str]] = []
    effects = Effects()
    flow = Approvals(rig, effects)
    flow.task = replace(
        flow.task,
        on_decision=lambda notice, services: heard.append((notice.outcome, str(notice.facts.get("owner")))),
    )
    approval_id = flow.propose_payment()
    flow.approve(approval_id, "bob", "reject")
    events = flow.queued_events()
    context = TaskContext("x", lambda: 60.0, None, LOG, flow.rig.metrics)  # type: ignore[arg-type]
    for _ in range(2):  # a redelivered event does not tell the task twice
        flow.executor(events[0], context)
    assert heard == [("rejected", "owner@example.com")] and effects.paid == []


def test_a_pending_proposal_survives_every_process_restarting(flow: Approvals) -> None:
    # Given a proposal waiting for a person
    approval_id = flow.propose_payment()
    # When every process is replaced (new clients, new desk, new executor: nothing in memory carries over)
    restarted = Approvals(flow.rig, flow.effects)
    # Then the proposal is still there, decidable, and runs once
    assert restarted.proposals.get(approval_id) is not None
    assert "Approved" in restarted.approve(approval_id, "alice").body
    restarted.execute_all()
    assert len(flow.effects.paid) == 1


def veto_flow(rig: AgentRig, effects: Effects) -> Approvals:
    from lockgate.approvals.events import VetoTimer

    config = replace(
        CONFIG, tools={"pay": ToolApproval(roles=("payments",), pattern="veto", veto_minutes=30)}
    )
    flow = Approvals(rig, effects, config)
    tools = [replace(t, reversible=True) if t.name == "pay" else t for t in flow.task.tools]
    flow.task = replace(flow.task, tools=tools)
    db = rig.aws.client("dynamodb")
    flow.veto = VetoTimer(
        InboxStore(db, rig.aws.inbox_table),  # type: ignore[attr-defined]
        InboxQueue(rig.aws.client("sqs"), rig.aws.queue_url),
        LOG,
    )
    return flow


def propose_with_veto(flow: Approvals) -> tuple[str, InboxEvent]:
    flow.rig.stub.set_model(Scripted([tools_turn(use("t1", "pay", {"amount": 80})), Reply([say("ok")])]))
    approvals = ApprovalRequests(
        flow.config, flow.rig.clock, LOG, flow.rig.metrics, limits=flow.limits, veto_timer=flow.veto
    )
    loop = flow.rig.loop({"approvals": approvals})
    loop.run(flow.task, event(), DEADLINE)
    (item,) = flow.rig.aws.client("dynamodb").scan(TableName=flow.rig.aws.names["ApprovalsTable"])["Items"]
    approval_id = item["approval_id"]["S"]
    delivery = InboxStore(flow.rig.aws.client("dynamodb"), flow.rig.aws.inbox_table).get(
        f"approval#{approval_id}#veto"
    )
    return approval_id, InboxEvent(delivery, delivery.body or b"")


def test_a_veto_window_action_runs_after_its_window_only_if_nobody_vetoed(rig: AgentRig) -> None:
    from lockgate.errors import Deferred

    effects = Effects()
    flow = veto_flow(rig, effects)
    approval_id, veto_event = propose_with_veto(flow)
    told = rig.stub.requests[-1]["messages"][-1]["content"][0]["content"]
    assert "will run in 30 minutes unless a person rejects it" in told
    assert veto_event.delivery.available_at == int(rig.clock.now()) + 1800
    # the reviewer's page says it runs when the window closes unless someone rejects it
    assert (
        "If nobody rejects it, it runs anyway after"
        in flow.desk.show(approval_id, flow.link(approval_id, "bob")).body
    )
    context = TaskContext("x", lambda: 60.0, None, LOG, rig.metrics)  # type: ignore[arg-type]
    with pytest.raises(Deferred):  # too early: nothing runs inside the window
        flow.executor(veto_event, context)
    assert effects.paid == []
    rig.clock.advance(1801)
    assert "approved by veto window passed" in flow.executor(veto_event, context)
    assert len(effects.paid) == 1
    flow.executor(veto_event, context)  # a redelivery does not run it again
    assert len(effects.paid) == 1


def test_a_vetoed_action_never_runs(rig: AgentRig) -> None:
    effects = Effects()
    flow = veto_flow(rig, effects)
    approval_id, veto_event = propose_with_veto(flow)
    flow.approve(approval_id, "bob", "reject")
    rig.clock.advance(1801)
    context = TaskContext("x", lambda: 60.0, None, LOG, rig.metrics)  # type: ignore[arg-type]
    assert flow.executor(veto_event, context).startswith("not run: rejected by bob")
    assert effects.paid == []


def test_a_draft_only_tool_is_prepared_by_the_assistant_and_sent_by_a_person(rig: AgentRig) -> None:
    effects = Effects()
    config = replace(CONFIG, tools={**CONFIG.tools, "send": ToolApproval(pattern="draft")})
    flow = Approvals(rig, effects, config)
    rig.stub.set_model(
        Scripted(
            [
                tools_turn(use("t1", "send", {"to": "owner@example.com", "text": "Hi"})),
                Reply([say("drafted")]),
            ]
        )
    )
    loop = rig.loop({"approvals": ApprovalRequests(config, rig.clock, LOG, rig.metrics, limits=flow.limits)})
    loop.run(flow.task, event(), DEADLINE)
    # the call passed every check, yet nothing was sent: it waits as a draft
    assert effects.sent == []
    (item,) = rig.aws.client("dynamodb").scan(TableName=rig.aws.names["ApprovalsTable"])["Items"]
    assert "draft only" in item["why"]["S"]
    assert "Approved" in flow.approve(item["approval_id"]["S"], "carol").body  # send has no role rule
    flow.execute_all()
    assert [m["to"] for m in effects.sent] == ["owner@example.com"]


def test_batch_review_lists_what_waits_for_one_reviewer(flow: Approvals) -> None:
    from lockgate.approvals.desk import LinkSigner
    from lockgate.approvals.digest import ReviewDigest

    first = flow.propose_payment(delivery="d-1")
    second = flow.propose_payment(amount=70, delivery="d-2")
    digest = ReviewDigest(
        proposals=flow.proposals,
        decisions=flow.decisions,
        config=CONFIG,
        signer=LinkSigner(CONFIG, lambda: [SECRET], flow.rig.clock, "https://example.test/approvals"),
        link_secrets=lambda: [SECRET],
        clock=flow.rig.clock,
        base_url="https://example.test/approvals",
        log=LOG,
        metrics=flow.rig.metrics,
    )

    def digest_query(reviewer: Reviewer) -> dict[str, str]:
        return dict(parse_qsl(urlsplit(digest.link_for(reviewer.id, digest.items_for(reviewer))).query))

    query = digest_query(CONFIG.reviewers[0])
    page = digest.page(query)
    assert page.status == 200 and "2 waiting for Alice" in page.body
    assert "pay $80.00" in page.body and "pay $70.00" in page.body
    # listing decides nothing; each item is still decided on its own page
    assert decisions_table(flow) == []
    flow.approve(first, "alice")
    assert "1 waiting for Alice" in digest.page(query).body
    # carol may not decide payments: her digest lists nothing
    carol = digest_query(CONFIG.reviewers[2])
    assert "Nothing is waiting for you" in digest.page(carol).body
    # a proposal link is not a digest link, and a forged one shows nothing
    assert digest.page(flow.link(second, "alice")).status == 403
    assert digest.page({**query, "r": "bob"}).status == 403


def test_an_approved_action_with_an_unknown_outcome_waits_for_reconciliation_and_tells_no_one(
    rig: AgentRig,
) -> None:
    # Given an approved payment whose call times out after it may have gone through (UNKNOWN)
    heard: list[str] = []
    effects = Effects()
    flow = Approvals(rig, effects)
    flow.task = replace(flow.task, on_decision=lambda notice, services: heard.append(notice.outcome))
    approval_id = flow.propose_payment()
    flow.approve(approval_id, "alice")
    effects.pay_fails_unknown = True
    (decided,) = flow.queued_events()
    context = TaskContext("x", lambda: 60.0, None, LOG, flow.rig.metrics)  # type: ignore[arg-type]
    # When the worker executes it, Then the event is handed back for later (after reconciliation)
    with pytest.raises(Deferred) as waited:
        flow.executor(decided, context)
    assert waited.value.delay_seconds >= 15 * 60 and "UNKNOWN" in str(waited.value)
    # And the customer is told nothing yet: "not done" could be false
    assert heard == []
