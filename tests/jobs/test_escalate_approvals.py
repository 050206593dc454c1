"""escalate-approvals on moto: a request nobody decided in time is marked escalated once, by the
schedule's time; from then on its tool's escalate_roles may decide it, and the notifier sends each of
them their own link (as SES recorded it) and nobody else a second one."""

from __future__ import annotations

import time
from urllib.parse import parse_qsl, urlsplit

from moto.core import DEFAULT_ACCOUNT_ID
from moto.ses.models import ses_backends

from lockgate.actions.tools import fingerprint
from lockgate.approvals.decisions import Choice, DecisionOutcome, DecisionRecorder, DecisionStore
from lockgate.approvals.desk import LinkSigner
from lockgate.approvals.eligibility import eligible_reviewers
from lockgate.approvals.links import verify_link
from lockgate.approvals.notify import EmailChannel, Notifier
from lockgate.approvals.notify_batch import NotifyBatch
from lockgate.approvals.proposals import HOUR, Proposal, ProposalStore
from lockgate.approvals.standing import Standing
from lockgate.clock import FixedClock
from lockgate.config import ApprovalsConfig, Reviewer, ToolApproval
from lockgate.inbox.queue import InboxQueue
from lockgate.inbox.store import InboxStore
from lockgate.jobs.builtin.escalate_approvals import ApprovalEscalation
from lockgate.jobs.schedule import iso
from lockgate.telemetry import CountingMetrics
from tests.jobs.conftest import context
from tests.support import LOG, Aws

SECRET = b"approval-link-secret-for-tests-0123456789"
FROM = "approvals@shop.example.com"
CONFIG = ApprovalsConfig(
    reviewers=(
        Reviewer("alice", "Alice", ("payments",), "alice@example.com"),
        Reviewer("lee", "Lee (lead)", ("leads",), "lee@example.com"),
        Reviewer("kim", "Kim (lead)", ("leads", "payments"), "kim@example.com"),
    ),
    tools={
        "pay": ToolApproval(roles=("payments",), escalate_after_minutes=30, escalate_roles=("leads",)),
        "reply": ToolApproval(roles=("payments",)),  # no escalation
    },
)


def emails() -> list[tuple[str, str, str]]:
    return [
        (m.destinations["ToAddresses"][0], m.subject, m.body)
        for m in ses_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].sent_messages
    ]


class Escalations:
    def __init__(self, aws: Aws, clock: FixedClock) -> None:
        db = aws.client("dynamodb")
        self.clock, self.aws = clock, aws
        self.proposals = ProposalStore(db, aws.names["ApprovalsTable"])
        self.decisions = DecisionStore(db, aws.names["DecisionsTable"])
        self.job = ApprovalEscalation(proposals=self.proposals, decisions=self.decisions, config=CONFIG)
        self.recorder = DecisionRecorder(
            decisions=self.decisions,
            config=CONFIG,
            inbox=InboxStore(db, aws.inbox_table),
            queue=InboxQueue(aws.client("sqs"), aws.queue_url),
            clock=clock,
            log=LOG,
            metrics=CountingMetrics(),
        )
        ses = aws.client("ses")
        ses.verify_email_identity(EmailAddress=FROM)
        signer = LinkSigner(CONFIG, lambda: [SECRET], clock, "https://example.test/approvals")
        notifier = Notifier(
            signer.links_for, lambda _: CONFIG.reviewers, [EmailChannel(ses, FROM)], LOG, CountingMetrics()
        )
        self.stream = NotifyBatch(notifier, None, LOG, CONFIG)

    def seed(self, approval_id: str, tool: str = "pay", created_ago: int = 0) -> Proposal:
        now = int(self.clock.now())
        args = {"amount": 80}
        proposal = Proposal(
            approval_id, "test-task", f"run-{approval_id}", tool, args, fingerprint(args),
            f"pay $80 ({approval_id})", "", ("over the limit",), now - created_ago,
            now - created_ago + 24 * HOUR, HOUR,
        )  # fmt: skip
        self.proposals.propose(proposal)
        return proposal

    def run(self, at: float) -> dict[str, int]:
        """One run of the job, scheduled at ``at`` (the schedule's time, not the clock's)."""
        return dict(self.job(context(self.clock, scheduled_time=iso(at))).counts)

    def stored(self, approval_id: str) -> Proposal:
        proposal = self.proposals.get(approval_id)
        assert proposal is not None
        return proposal

    def modified(self, proposal: Proposal) -> None:
        """What the Approvals stream hands the notifier for the job's one change to the proposal."""
        item = self.aws.client("dynamodb").get_item(
            TableName=self.aws.names["ApprovalsTable"], Key={"approval_id": {"S": proposal.approval_id}}
        )["Item"]
        record = {
            "eventName": "MODIFY",
            "dynamodb": {
                "Keys": {"approval_id": item["approval_id"]},
                "NewImage": item,
                "SequenceNumber": "1",
            },
        }
        assert self.stream.handle({"Records": [record]}) == {"batchItemFailures": []}


def test_a_request_nobody_decided_is_escalated_once_at_its_time_by_the_schedules_clock(aws: Aws) -> None:
    # Given a payment proposed now (the clock stands still: only the schedule's time moves)
    clock = FixedClock(time.time())
    world = Escalations(aws, clock)
    proposal = world.seed("ap_escalate_1")
    now = clock.now()
    # When the job runs 29 minutes later, nothing is due
    assert (
        world.run(now + 29 * 60)["escalated"] == 0 and world.stored(proposal.approval_id).escalated_at is None
    )
    # When it runs at 30 minutes, it is escalated, at that scheduled time
    assert world.run(now + 30 * 60)["escalated"] == 1
    assert world.stored(proposal.approval_id).escalated_at == int(now + 30 * 60)
    # And a later (or overlapping) run changes nothing
    assert world.run(now + 35 * 60)["escalated"] == 0
    assert world.stored(proposal.approval_id).escalated_at == int(now + 30 * 60)


def test_only_pending_escalating_requests_are_escalated(aws: Aws) -> None:
    clock = FixedClock(time.time())
    world = Escalations(aws, clock)
    decided = world.seed("ap_decided")
    world.seed("ap_no_escalation", tool="reply")
    assert world.recorder.record(decided, "alice", Choice.APPROVE, "cli") is DecisionOutcome.APPROVED
    expired = world.seed("ap_expired", created_ago=25 * HOUR)
    counts = world.run(clock.now() + HOUR)
    assert counts == {"escalated": 0, "checked": 3}
    assert all(
        world.stored(p).escalated_at is None for p in ("ap_decided", "ap_no_escalation", expired.approval_id)
    )


def test_once_escalated_the_second_group_may_decide_and_each_gets_their_own_link(aws: Aws) -> None:
    clock = FixedClock(time.time())
    world = Escalations(aws, clock)
    proposal = world.seed("ap_escalate_2")
    # Before: only the payments reviewers may decide, and lee's approval is refused
    assert [r.id for r in eligible_reviewers(CONFIG, proposal, Standing().current(proposal))] == [
        "alice",
        "kim",
    ]
    assert world.recorder.record(proposal, "lee", Choice.APPROVE, "cli") is DecisionOutcome.NOT_ALLOWED
    # When the job escalates it and the notifier sees the change on the stream
    world.run(clock.now() + 31 * 60)
    escalated = world.stored(proposal.approval_id)
    world.modified(escalated)
    # Then lee (leads only) gets one email with his own signed link, saying it was escalated; nobody else
    ((to, subject, text),) = emails()
    assert to == "lee@example.com" and subject.startswith("Escalated to you: pay $80")
    link = next(line for line in text.splitlines() if line.startswith("https://"))
    claims = verify_link([SECRET], proposal.approval_id, dict(parse_qsl(urlsplit(link).query)), clock.now())
    assert claims.reviewer == "lee"
    # And lee may decide now, and his approval settles it
    assert [r.id for r in eligible_reviewers(CONFIG, escalated, Standing().current(escalated))] == [
        "alice",
        "kim",
        "lee",
    ]
    assert world.recorder.record(escalated, "lee", Choice.APPROVE, "cli") is DecisionOutcome.APPROVED
