"""expire-approvals on seeded proposals: only what nobody decided in time, or approved but never run."""

from __future__ import annotations

import json
from typing import Any

import pytest

from lockgate.actions.ledger import Ledger
from lockgate.actions.once import operation_key
from lockgate.actions.tools import fingerprint
from lockgate.agent.tasks import DecisionNotice
from lockgate.approvals.decisions import Choice, DecisionRecord, DecisionStore
from lockgate.approvals.executor import ApprovalExecutor
from lockgate.approvals.proposals import HOUR, Proposal, ProposalStore
from lockgate.clock import FixedClock
from lockgate.config import ApprovalsConfig, Reviewer, ToolApproval
from lockgate.inbox.queue import InboxQueue
from lockgate.inbox.routing import InboxEvent, TaskContext
from lockgate.inbox.store import InboxStore
from lockgate.jobs.builtin.expire_approvals import ApprovalExpiry
from lockgate.telemetry import CountingMetrics
from lockgate_infra.local.spans import install
from tests.agent.toolkit import Effects, make_task
from tests.jobs.conftest import context
from tests.support import LOG, Aws

CONFIG = ApprovalsConfig(
    reviewers=(Reviewer("alice", "Alice", ("payments",)), Reviewer("bob", "Bob", ("payments",))),
    tools={"pay": ToolApproval(roles=("payments",))},
)


class Desk:
    """Seeded proposals and decisions, the job, and the worker's executor on one moto account."""

    def __init__(self, aws: Aws, clock: FixedClock) -> None:
        db = aws.client("dynamodb")
        self.aws, self.clock = aws, clock
        self.proposals = ProposalStore(db, aws.names["ApprovalsTable"])
        self.decisions = DecisionStore(db, aws.names["DecisionsTable"])
        self.ledger = Ledger(db, aws.state_table, clock)
        self.notices: list[DecisionNotice] = []
        self.task = make_task(Effects(), on_decision=lambda notice, services: self.notices.append(notice))
        self.inbox = InboxStore(db, aws.inbox_table)
        self.queue = InboxQueue(aws.client("sqs"), aws.queue_url)
        self.metrics = CountingMetrics()

    def seed(
        self, name: str, amount: int, created_ago: int, decide_within: int, trace: str | None = None
    ) -> Proposal:
        now = int(self.clock.now())
        args = {"amount": amount}
        proposal = Proposal(
            approval_id=f"ap_{name}",
            task=self.task.name,
            run_id=f"github#{name}",
            tool="pay",
            args=args,
            fingerprint=fingerprint(args),
            summary=f"pay ${amount:.2f}",
            unverified_reason="",
            why=("payments over $50 need a person",),
            created_at=now - created_ago,
            expires_at=now - created_ago + decide_within,
            run_within_seconds=HOUR,
            extra={"trace": trace} if trace else {},
        )
        assert self.proposals.propose(proposal)[1]
        return proposal

    def decide(self, proposal: Proposal, verdict: Choice, at: int, reviewer: str = "alice") -> None:
        record = DecisionRecord(proposal.approval_id, reviewer, verdict, at, proposal.fingerprint)
        assert self.decisions.record(record)

    def job(self) -> ApprovalExpiry:
        return ApprovalExpiry(
            proposals=self.proposals,
            decisions=self.decisions,
            config=CONFIG,
            inbox=self.inbox,
            queue=self.queue,
            ledger=self.ledger,
            tasks={self.task.name: self.task},
        )

    def work_the_queue(self) -> dict[str, str]:
        """The worker's executor on every queued approval event: approval id → outcome."""
        executor = ApprovalExecutor(
            proposals=self.proposals,
            decisions=self.decisions,
            tasks={self.task.name: self.task},
            ledger=self.ledger,
            config=CONFIG,
            clock=self.clock,
            log=LOG,
            metrics=self.metrics,
        )
        task_context = TaskContext("x", lambda: 60.0, None, LOG, self.metrics)  # type: ignore[arg-type]
        outcomes = {}
        for message in self.aws.drain(self.aws.queue_url):
            delivery = self.inbox.get(json.loads(message["Body"])["pk"])
            event = InboxEvent(delivery, delivery.body or b"")
            outcomes[event.json()["approval_id"]] = executor(event, task_context)
        return outcomes

    def expiry_events(self) -> list[str]:
        return sorted(i["pk"]["S"] for i in self.aws.inbox_items() if i["pk"]["S"].endswith("#expired"))


@pytest.fixture
def desk(aws: Aws, clock: FixedClock) -> Desk:
    return Desk(aws, clock)


def test_only_undecided_and_approved_but_unrun_proposals_expire_and_the_task_hears_once(desk: Desk) -> None:
    now = int(desk.clock.now())
    # Given a proposal nobody decided within its 24 hours
    undecided = desk.seed("undecided", 60, created_ago=25 * HOUR, decide_within=24 * HOUR)
    # And one approved one second before its decision window closed (its run window is still open)
    last_second = desk.seed("last-second", 61, created_ago=24 * HOUR + 60, decide_within=24 * HOUR)
    desk.decide(last_second, Choice.APPROVE, at=last_second.expires_at - 1)
    # And one approved two hours ago that never ran (its one-hour run window has passed)
    unrun = desk.seed("unrun", 62, created_ago=3 * HOUR, decide_within=24 * HOUR)
    desk.decide(unrun, Choice.APPROVE, at=now - 2 * HOUR)
    # And one approved two hours ago that did run (the ledger holds it)
    ran = desk.seed("ran", 63, created_ago=3 * HOUR, decide_within=24 * HOUR)
    desk.decide(ran, Choice.APPROVE, at=now - 2 * HOUR)
    desk.ledger.execute(
        op_key=operation_key(ran.run_id, "pay", "63.00", ran.args),
        fingerprint=ran.fingerprint,
        tool="pay",
        run_id=ran.run_id,
        summary=ran.summary,
        effect=lambda key: {"paid": "63.00"},
        is_failure=lambda exc: False,
        is_unknown=lambda exc: False,
    )
    # And one rejected in time, and one still waiting inside its window
    rejected = desk.seed("rejected", 64, created_ago=25 * HOUR, decide_within=24 * HOUR)
    desk.decide(rejected, Choice.REJECT, at=now - 2 * HOUR, reviewer="bob")
    desk.seed("waiting", 65, created_ago=HOUR, decide_within=24 * HOUR)
    # When the job runs
    result = desk.job()(context(desk.clock, desk.metrics))
    # Then exactly the undecided and the unrun one became expired: one inbox event each
    assert result.done and result.counts["expired"] == 2
    assert desk.expiry_events() == ["approval#ap_undecided#expired", "approval#ap_unrun#expired"]
    assert desk.metrics.totals["ApprovalsExpired"] == 2
    # When the worker handles the queued events
    outcomes = desk.work_the_queue()
    # Then the task heard "expired" once for each, through the DecisionNotice path
    assert sorted((n.approval_id, n.outcome) for n in desk.notices) == [
        (undecided.approval_id, "expired"),
        (unrun.approval_id, "expired"),
    ]
    assert set(outcomes) == {undecided.approval_id, unrun.approval_id}
    assert all(outcome.startswith("not run: expired") for outcome in outcomes.values())


def test_a_repeated_run_changes_nothing_and_tells_no_one_twice(desk: Desk) -> None:
    # Given an undecided proposal already expired by a first run, and its event handled
    desk.seed("undecided", 60, created_ago=25 * HOUR, decide_within=24 * HOUR)
    assert desk.job()(context(desk.clock)).counts["expired"] == 1
    desk.work_the_queue()
    # When the job runs again (a Scheduler retry, or the next day)
    desk.clock.advance(HOUR)
    again = desk.job()(context(desk.clock))
    # Then no new event is stored or queued, and the task was told once
    assert (again.counts["expired"], again.counts["already_expired"]) == (0, 1)
    assert desk.aws.drain(desk.aws.queue_url) == []
    assert len(desk.expiry_events()) == 1 and len(desk.notices) == 1


def test_an_expiry_event_for_a_proposal_approved_meanwhile_tells_nothing(desk: Desk) -> None:
    # Given the job queued an expiry for a proposal approved just before the event is handled
    # (a reviewer on a skewed clock): the executor re-checks instead of trusting the event
    proposal = desk.seed("raced", 60, created_ago=25 * HOUR, decide_within=24 * HOUR)
    desk.job()(context(desk.clock))
    desk.decide(proposal, Choice.APPROVE, at=int(desk.clock.now()))
    # When the worker handles the expiry event
    outcomes = desk.work_the_queue()
    # Then nothing is told or run: it is not expired
    assert outcomes == {proposal.approval_id: "not run: not expired (approved)"}
    assert desk.notices == []


def test_a_job_stopped_by_its_deadline_resumes_without_redoing(desk: Desk, monkeypatch: Any) -> None:
    from lockgate.jobs.builtin import recent_proposals

    # Given three undecided proposals and pages of one
    monkeypatch.setattr(recent_proposals, "PAGE_SIZE", 1)
    for n in range(3):
        desk.seed(f"undecided-{n}", 60 + n, created_ago=25 * HOUR, decide_within=24 * HOUR)
    # When a first run has time for one page, and the next resumes from its cursor
    first = desk.job()(context(desk.clock, pages=1))
    second = desk.job()(context(desk.clock, cursor=first.cursor))
    # Then the two runs expired the three between them, none twice
    assert first.done is False and second.done is True
    assert first.counts["expired"] + second.counts["expired"] == 3
    assert first.counts["already_expired"] + second.counts["already_expired"] == 0


def test_an_expiry_joins_the_proposal_s_trace_and_the_event_carries_it_on(desk: Desk) -> None:
    # Given spans collected, and a proposal nobody decided, stored by a traced run
    spans = install()
    carried = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    desk.seed("traced", 60, created_ago=25 * HOUR, decide_within=24 * HOUR, trace=carried)
    # When the job expires it
    desk.job()(context(desk.clock, desk.metrics))
    # Then its span is under the proposing span, and the expiry event carries that span on
    (expired,) = [
        s for s in spans.spans() if s.name == "expire approval" and s.parent_id == "00f067aa0ba902b7"
    ]
    assert expired.attributes["lockgate.approval.id"] == "ap_traced"
    event = desk.inbox.get("approval#ap_traced#expired")
    assert event.trace == f"00-{expired.trace_id}-{expired.span_id}-01"
