"""A reviewer's list of pending proposals that is not a bearer credential.

The digest page (GET /approvals?…) lists what waits and mints no decision links; a proposal's own
link is re-sent only by a POST with the digest's form token, to the reviewer's own email (as moto's
SES records it), at most five an hour, each request an audit row. The digest link expires with the
digest. Every refusal is the neutral page.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlsplit

import pytest
from moto.core import DEFAULT_ACCOUNT_ID
from moto.ses.models import ses_backends

from lockgate.actions.tools import fingerprint
from lockgate.approvals.decisions import Choice, DecisionRecord, DecisionStore
from lockgate.approvals.desk import LinkSigner
from lockgate.approvals.digest import DIGEST_ID, ReviewDigest
from lockgate.approvals.links import form_token, verify_link
from lockgate.approvals.notify import EmailChannel
from lockgate.approvals.pages import FORM_TOKEN_FIELD, LINK_FIELDS, DigestItem
from lockgate.approvals.proposals import HOUR, Proposal, ProposalStore
from lockgate.approvals.refusal import unusable_page
from lockgate.approvals.reissue import PARTITION, REISSUES_PER_HOUR, LinkReissuer, ReissueAudit
from lockgate.clock import FixedClock
from lockgate.config import ApprovalsConfig, Reviewer, ToolApproval
from lockgate.telemetry import CountingMetrics
from tests.support import Aws, RecordingLog

SECRET = b"approval-link-secret-for-tests-0123456789"
FROM = "approvals@shop.example.com"
BASE = "https://example.test/approvals"
SAME_ORIGIN = {"host": "example.test", "origin": "https://example.test", "sec-fetch-site": "same-origin"}
CONFIG = ApprovalsConfig(
    reviewers=(
        Reviewer("alice", "Alice", ("payments",), "alice@example.com"),
        Reviewer("bob", "Bob", ("payments",), "bob@example.com"),
        Reviewer("carol", "Carol", ("support",), "carol@example.com"),
    ),
    tools={"pay": ToolApproval(roles=("payments",))},
)


def emails() -> list[tuple[str, str, str]]:
    """(to, subject, text) of every email moto's SES recorded."""
    return [
        (m.destinations["ToAddresses"][0], m.subject, m.body)
        for m in ses_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].sent_messages
    ]


@dataclass
class Desk:
    clock: FixedClock
    proposals: ProposalStore
    decisions: DecisionStore
    digest: ReviewDigest
    reissuer: LinkReissuer
    audit: ReissueAudit
    log: RecordingLog

    def seed(self, approval_id: str, amount: int, expires_in: int = 23 * HOUR) -> Proposal:
        now = int(self.clock.now())
        args = {"amount": amount}
        why = ("payments over $50 need a person",)
        proposal = Proposal(
            approval_id, "test-task", f"run-{approval_id}", "pay", args, fingerprint(args),
            f"pay ${amount}.00", "", why, now - HOUR, now + expires_in, HOUR,
        )  # fmt: skip
        self.proposals.propose(proposal)
        return proposal

    def digest_query(self, reviewer: str = "alice") -> dict[str, str]:
        items = self.digest.items_for(next(r for r in CONFIG.reviewers if r.id == reviewer))
        return dict(parse_qsl(urlsplit(self.digest.link_for(reviewer, items)).query))

    def resend_form(self, query: dict[str, str], approval_id: str) -> dict[str, str]:
        """What the browser posts from the digest page: its hidden fields and the item's button."""
        body = self.digest.page(query).body
        fields = dict(re.findall(r'<input type=hidden name="([^"]+)" value="([^"]*)">', body))
        assert fields, "the page has no form"
        return {**fields, "approval": approval_id}

    def signed_form(self, query: dict[str, str], approval_id: str) -> dict[str, str]:
        """A valid digest form for any id (even one the page would not list)."""
        claims = verify_link([SECRET], DIGEST_ID, query, self.clock.now())
        return {**query, FORM_TOKEN_FIELD: form_token(SECRET, claims), "approval": approval_id}


@pytest.fixture
def desk(aws: Aws, clock: FixedClock) -> Desk:
    db = aws.client("dynamodb")
    ses = aws.client("ses")
    ses.verify_email_identity(EmailAddress=FROM)
    proposals = ProposalStore(db, aws.names["ApprovalsTable"])
    decisions = DecisionStore(db, aws.names["DecisionsTable"])
    signer = LinkSigner(CONFIG, lambda: [SECRET], clock, BASE)
    log, metrics = RecordingLog(), CountingMetrics()
    digest = ReviewDigest(
        proposals=proposals, decisions=decisions, config=CONFIG, signer=signer,
        link_secrets=lambda: [SECRET], clock=clock, base_url=BASE, log=log, metrics=metrics,
    )  # fmt: skip
    audit = ReissueAudit(db, aws.state_table)
    reissuer = LinkReissuer(
        digest=digest, proposals=proposals, decisions=decisions, config=CONFIG, signer=signer,
        channel=EmailChannel(ses, FROM), audit=audit, clock=clock, log=log, metrics=metrics,
    )  # fmt: skip
    return Desk(clock, proposals, decisions, digest, reissuer, audit, log)


def decision_rows(aws: Aws) -> list[dict[str, object]]:
    items = aws.client("dynamodb").scan(TableName=aws.names["DecisionsTable"])["Items"]
    return [i for i in items if "verdict" in i]  # not the #state item


def test_the_digest_page_lists_what_waits_and_mints_no_decision_links(desk: Desk, aws: Aws) -> None:
    # Given two payments waiting for alice
    desk.seed("ap_first", 80, expires_in=5 * HOUR)
    desk.seed("ap_second", 70, expires_in=2 * HOUR)
    query = desk.digest_query("alice")
    # When her digest link is opened (three times, as a mail scanner might)
    pages = [desk.digest.page(query) for _ in range(3)]
    # Then it lists both, soonest deadline first, with a re-send button for each...
    body = pages[0].body
    assert pages[0].status == 200 and "2 waiting for Alice" in body
    assert body.index("pay $70.00") < body.index("pay $80.00")
    assert 'name=approval value="ap_first"' in body and 'name=approval value="ap_second"' in body
    # ...and no link that could decide: no proposal page, no proposal signature
    assert "/approvals/ap_" not in body and "href=" not in body
    signatures = set(re.findall(r'name="s" value="([^"]+)"', body))
    assert signatures == {query["s"]}  # only the digest link's own, which verifies for "digest" alone
    # And nothing changed: no decision, no email, no audit row
    assert decision_rows(aws) == [] and emails() == [] and desk.audit.entries() == []


def test_a_resend_post_emails_the_reviewer_their_own_link_and_is_audited(desk: Desk, aws: Aws) -> None:
    # Given a payment waiting for alice and her digest page
    proposal = desk.seed("ap_first", 80)
    query = desk.digest_query("alice")
    form = desk.resend_form(query, "ap_first")
    # When she asks for its link again
    page = desk.reissuer.reissue(form, SAME_ORIGIN, "203.0.113.7")
    # Then the page says it was sent, and does not carry the link itself
    assert page.status == 200 and "A fresh link is on its way" in page.body
    assert "/approvals/ap_first" not in page.body
    # And SES recorded one email to alice with her own link, which verifies for her and this proposal
    ((to, subject, text),) = emails()
    assert (to, subject) == ("alice@example.com", "Your link: pay $80.00")
    (link,) = re.findall(r"https://\S+", text)
    assert urlsplit(link).path == "/approvals/ap_first"
    claims = verify_link([SECRET], "ap_first", dict(parse_qsl(urlsplit(link).query)), desk.clock.now())
    assert (claims.reviewer, claims.fingerprint) == ("alice", proposal.fingerprint)
    # And the request is an audit row: who, which, when, from where, what happened
    ((entry),) = desk.audit.entries()
    assert (entry.reviewer, entry.approval_id, entry.at, entry.outcome, entry.source_ip) == (
        "alice", "ap_first", int(desk.clock.now()), "sent", "203.0.113.7",
    )  # fmt: skip
    # And nothing was decided
    assert decision_rows(aws) == []


def test_resends_are_limited_per_reviewer_and_hour_and_audited_without_flooding(desk: Desk, aws: Aws) -> None:
    desk.seed("ap_first", 80)
    query = desk.digest_query("alice")
    form = desk.resend_form(query, "ap_first")
    # When alice (or whoever holds her digest link) asks three more times than the hourly allowance
    statuses = [desk.reissuer.reissue(form, SAME_ORIGIN).status for _ in range(REISSUES_PER_HOUR + 3)]
    # Then the extra ones are refused, and SES sent exactly the allowance
    assert statuses == [200] * REISSUES_PER_HOUR + [429] * 3
    assert len(emails()) == REISSUES_PER_HOUR
    # And the audit keeps each allowed request and the first refusal; the hour's row counts them all
    outcomes = Counter(e.outcome for e in desk.audit.entries())
    assert outcomes == {"sent": REISSUES_PER_HOUR, "rate-limited": 1}
    hour = int(desk.clock.now()) // HOUR * HOUR
    row = aws.client("dynamodb").get_item(
        TableName=aws.state_table, Key={"pk": {"S": PARTITION}, "sk": {"S": f"allowance#alice#{hour}"}}
    )["Item"]
    assert row["attempts"]["N"] == str(REISSUES_PER_HOUR + 3)
    # And bob's allowance is his own
    bob = desk.resend_form(desk.digest_query("bob"), "ap_first")
    assert desk.reissuer.reissue(bob, SAME_ORIGIN).status == 200
    # And the next hour alice may ask again
    desk.clock.advance(HOUR)
    assert desk.reissuer.reissue(form, SAME_ORIGIN).status == 200
    assert len(emails()) == REISSUES_PER_HOUR + 2


@pytest.mark.parametrize("why", ["decided by her", "rejected by another", "not hers to decide", "unknown id"])
def test_a_resend_for_what_does_not_wait_for_the_reviewer_sends_nothing(desk: Desk, why: str) -> None:
    proposal = desk.seed("ap_first", 80)
    reviewer, target = "alice", "ap_first"
    if why == "decided by her":
        desk.decisions.record(
            DecisionRecord("ap_first", "alice", Choice.APPROVE, int(desk.clock.now()), proposal.fingerprint)
        )
    elif why == "rejected by another":
        desk.decisions.record(
            DecisionRecord("ap_first", "bob", Choice.REJECT, int(desk.clock.now()), proposal.fingerprint)
        )
    elif why == "not hers to decide":
        reviewer = "carol"
    elif why == "unknown id":
        target = "ap_never"
    form = desk.signed_form(desk.digest_query(reviewer), target)
    page = desk.reissuer.reissue(form, SAME_ORIGIN)
    assert page.status == 409 and "Nothing to send" in page.body
    assert emails() == []
    assert [(e.reviewer, e.outcome) for e in desk.audit.entries()] == [(reviewer, "not waiting")]


@pytest.mark.parametrize(
    "tamper",
    [
        "forged digest signature",
        "bad form token",
        "no form token",
        "a proposal link instead of the digest link",
        "another reviewer's name",
        "expired digest",
        "cross-site origin",
        "cross-site fetch",
        "null origin",
    ],
)
def test_a_resend_without_a_valid_digest_token_from_the_page_itself_is_refused(
    desk: Desk, tamper: str
) -> None:
    desk.seed("ap_first", 80)
    form = desk.resend_form(desk.digest_query("alice"), "ap_first")
    headers = dict(SAME_ORIGIN)
    if tamper == "forged digest signature":
        form["s"] = form["s"][::-1]
    elif tamper == "bad form token":
        form[FORM_TOKEN_FIELD] = "x" * 43
    elif tamper == "no form token":
        del form[FORM_TOKEN_FIELD]
    elif tamper == "a proposal link instead of the digest link":
        link = desk.digest.items_for(CONFIG.reviewers[0])[0].link
        form |= {k: v for k, v in parse_qsl(urlsplit(link).query) if k in LINK_FIELDS}
    elif tamper == "another reviewer's name":
        form["r"] = "bob"
    elif tamper == "expired digest":
        desk.clock.advance(24 * HOUR)
    elif tamper == "cross-site origin":
        headers["origin"] = "https://evil.example"
    elif tamper == "cross-site fetch":
        headers["sec-fetch-site"] = "cross-site"
    elif tamper == "null origin":  # an opaque origin that no Sec-Fetch-Site vouches for
        headers = {"host": SAME_ORIGIN["host"], "origin": "null"}
    page = desk.reissuer.reissue(form, headers)
    # Then the neutral page, nothing sent, nothing audited (the log says why)
    assert (page.status, page.body) == (unusable_page().status, unusable_page().body)
    assert emails() == [] and desk.audit.entries() == []
    (refused,) = desk.log.at("warning")
    assert refused["msg"] == "approval request refused"


def test_a_digest_link_expires_with_the_digest(desk: Desk) -> None:
    # Given a digest listing proposals that expire in 2 h and 5 h
    desk.seed("ap_soon", 80, expires_in=2 * HOUR)
    desk.seed("ap_later", 70, expires_in=5 * HOUR)
    query = desk.digest_query("alice")
    claims = verify_link([SECRET], DIGEST_ID, query, desk.clock.now())
    # Then its link expires with the last of them, not a day later
    assert claims.expires_at == int(desk.clock.now()) + 5 * HOUR
    desk.clock.advance(5 * HOUR - 1)
    assert desk.digest.page(query).status == 200
    desk.clock.advance(2)
    assert (desk.digest.page(query).status, desk.digest.page(query).body) == (
        unusable_page().status, unusable_page().body,
    )  # fmt: skip
    # And a digest is never valid longer than a day
    items = [DigestItem("x", "y", int(desk.clock.now()) + 72 * HOUR, "", "ap_x")]
    far = dict(parse_qsl(urlsplit(desk.digest.link_for("alice", items)).query))
    assert int(far["e"]) == int(desk.clock.now()) + 24 * HOUR


@pytest.mark.parametrize("tamper", ["forged", "a proposal link", "unknown reviewer"])
def test_a_bad_digest_link_shows_the_neutral_page(desk: Desk, tamper: str) -> None:
    desk.seed("ap_first", 80)
    query = desk.digest_query("alice")
    if tamper == "forged":
        query["s"] = query["s"][::-1]
    elif tamper == "a proposal link":
        query = dict(parse_qsl(urlsplit(desk.digest.items_for(CONFIG.reviewers[0])[0].link).query))
    elif tamper == "unknown reviewer":
        query["r"] = "mallory"
    page = desk.digest.page(query)
    assert (page.status, page.body) == (unusable_page().status, unusable_page().body)
    assert "pay $80.00" not in page.body
