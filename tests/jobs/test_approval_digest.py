"""approval-digest on moto: one email per reviewer (as SES recorded it), only what waits, signed links."""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlsplit

import pytest
from moto.core import DEFAULT_ACCOUNT_ID
from moto.ses.models import ses_backends

from lockgate.actions.tools import fingerprint
from lockgate.approvals.decisions import Choice, DecisionRecord, DecisionStore
from lockgate.approvals.desk import LinkSigner
from lockgate.approvals.digest import DIGEST_ID, ReviewDigest
from lockgate.approvals.links import verify_link
from lockgate.approvals.notify import EmailChannel
from lockgate.approvals.proposals import HOUR, Proposal, ProposalStore
from lockgate.clock import FixedClock
from lockgate.config import ApprovalsConfig, Reviewer, ToolApproval
from lockgate.jobs.builtin.approval_digest import ApprovalDigestJob, DigestMarks
from lockgate.telemetry import CountingMetrics
from tests.jobs.conftest import context
from tests.support import LOG, Aws

SECRET = b"approval-link-secret-for-tests-0123456789"
FROM = "approvals@shop.example.com"
BASE = "https://example.test/approvals"
CONFIG = ApprovalsConfig(
    reviewers=(
        Reviewer("alice", "Alice", ("payments",), "alice@example.com"),
        Reviewer("bob", "Bob", ("payments",), "bob@example.com"),
        Reviewer("carol", "Carol", ("support",), "carol@example.com"),
        Reviewer("dave", "Dave", ("support",)),  # no address: nothing can reach him by email
    ),
    tools={"pay": ToolApproval(roles=("payments",)), "reply": ToolApproval(roles=("support",))},
)


def sent() -> list[tuple[str, str, str]]:
    """(to, subject, text) of every email moto's SES recorded."""
    return [
        (m.destinations["ToAddresses"][0], m.subject, m.body)
        for m in ses_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].sent_messages
    ]


class Digests:
    def __init__(self, aws: Aws, clock: FixedClock) -> None:
        db = aws.client("dynamodb")
        self.clock = clock
        self.proposals = ProposalStore(db, aws.names["ApprovalsTable"])
        self.decisions = DecisionStore(db, aws.names["DecisionsTable"])
        ses = aws.client("ses")
        ses.verify_email_identity(EmailAddress=FROM)
        digest = ReviewDigest(
            proposals=self.proposals,
            decisions=self.decisions,
            config=CONFIG,
            signer=LinkSigner(CONFIG, lambda: [SECRET], clock, BASE),
            link_secrets=lambda: [SECRET],
            clock=clock,
            base_url=BASE,
            log=LOG,
            metrics=CountingMetrics(),
        )
        self.job = ApprovalDigestJob(
            digest=digest,
            config=CONFIG,
            channel=EmailChannel(ses, FROM),
            marks=DigestMarks(db, aws.state_table),
        )

    def seed(self, approval_id: str, tool: str, summary: str, created_ago: int) -> Proposal:
        now = int(self.clock.now())
        args = {"id": approval_id}
        proposal = Proposal(
            approval_id, "test-task", f"run-{approval_id}", tool, args, fingerprint(args), summary, "",
            ("over the limit",), now - created_ago, now - created_ago + 24 * HOUR, HOUR,
        )  # fmt: skip
        self.proposals.propose(proposal)
        return proposal


@pytest.fixture
def digests(aws: Aws, clock: FixedClock) -> Digests:
    return Digests(aws, clock)


def links_in(text: str) -> list[str]:
    return re.findall(r"https://\S+", text)


def test_each_reviewer_gets_one_email_listing_only_what_waits_for_them_with_signed_links(
    digests: Digests,
) -> None:
    # Given a pending payment, a payment already approved, an expired one, and a pending reply
    digests.seed("ap_pending_pay", "pay", "pay $80.00 to the supplier", created_ago=HOUR)
    approved = digests.seed("ap_approved_pay", "pay", "pay $90.00 to the courier", created_ago=HOUR)
    digests.decisions.record(
        DecisionRecord(
            approved.approval_id, "alice", Choice.APPROVE, int(digests.clock.now()), approved.fingerprint
        )
    )
    digests.seed("ap_expired_pay", "pay", "pay $70.00 to the printer", created_ago=25 * HOUR)
    digests.seed("ap_pending_reply", "reply", "email ada@example.com: 'Re: refund'", created_ago=HOUR)
    # When the daily digest runs
    metrics = CountingMetrics()
    result = digests.job(context(digests.clock, metrics))
    # Then SES recorded one email per reachable reviewer with something waiting
    emails = {to: (subject, text) for to, subject, text in sent()}
    assert sorted(emails) == ["alice@example.com", "bob@example.com", "carol@example.com"]
    assert result.counts == {"sent": 3, "nothing_waiting": 0, "already_sent": 0, "unreachable": 1}
    assert metrics.totals["ApprovalDigestSent"] == 3
    # And each lists only the pending items that reviewer may decide
    for to, expected, unexpected in (
        ("alice@example.com", "pay $80.00", ("$90.00", "$70.00", "Re: refund")),
        ("bob@example.com", "pay $80.00", ("$90.00", "$70.00", "Re: refund")),
        ("carol@example.com", "Re: refund", ("$80.00", "$90.00", "$70.00")),
    ):
        subject, text = emails[to]
        assert subject == "1 approval(s) waiting for you" and expected in text
        assert not any(word in text for word in unexpected)
    # And every link in an email is signed for that reviewer: the item's own page and the digest page
    now = digests.clock.now()
    for to, approval_id in (
        ("alice@example.com", "ap_pending_pay"),
        ("carol@example.com", "ap_pending_reply"),
    ):
        item_link, digest_link = links_in(emails[to][1])
        reviewer = to.split("@")[0]
        assert urlsplit(item_link).path == f"/approvals/{approval_id}"
        assert (
            verify_link([SECRET], approval_id, dict(parse_qsl(urlsplit(item_link).query)), now).reviewer
            == reviewer
        )
        claims = verify_link([SECRET], DIGEST_ID, dict(parse_qsl(urlsplit(digest_link).query)), now)
        assert claims.reviewer == reviewer
        # And the digest link expires with the digest: when the last proposal it lists does
        item_claims = verify_link([SECRET], approval_id, dict(parse_qsl(urlsplit(item_link).query)), now)
        assert claims.expires_at == item_claims.expires_at == int(now) + 23 * HOUR


def test_a_repeated_run_the_same_day_sends_nothing_twice(digests: Digests) -> None:
    # Given the digest went out this morning
    digests.seed("ap_pending_pay", "pay", "pay $80.00 to the supplier", created_ago=HOUR)
    digests.job(context(digests.clock))
    # When Scheduler runs the same occurrence again
    again = digests.job(context(digests.clock))
    # Then no second email was sent
    assert again.counts["already_sent"] == 2 and len(sent()) == 2


def test_a_failed_send_is_not_marked_sent_so_the_retry_sends_it(digests: Digests, aws: Aws) -> None:
    from tests.support import fail_calls

    # Given SES refuses the first attempt
    digests.seed("ap_pending_pay", "pay", "pay $80.00 to the supplier", created_ago=HOUR)
    ses = digests.job._channel._ses  # noqa: SLF001 - the client the channel was built with
    refusals = [1]
    fail_calls(ses, "SendEmail", "Throttling", when=lambda params: bool(refusals and refusals.pop()))
    # When the run fails and Scheduler retries it
    with pytest.raises(Exception, match="Throttling"):
        digests.job(context(digests.clock))
    retried = digests.job(context(digests.clock))
    # Then both payment reviewers got their email exactly once
    assert retried.counts["sent"] == 2
    assert sorted(to for to, _, _ in sent()) == ["alice@example.com", "bob@example.com"]
