"""The approval callback as deployed (its handler, environment and API Gateway events) on moto.

From the digest page to a decision: the digest lists without links, a same-origin POST has the
proposal's own link emailed (SES, as moto records it) under the host the request reached, and that
link's decision form is refused from another site and accepted from its own page.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

import pytest
from moto.core import DEFAULT_ACCOUNT_ID
from moto.ses.models import ses_backends

from lockgate.actions.tools import fingerprint
from lockgate.approvals.proposals import Proposal, ProposalStore
from lockgate.approvals.reissue import ReissueAudit
from lockgate.config import load_config
from tests.support import Aws
from tests.unit.test_approval_notify import load_approval_app

ROOT = Path(__file__).resolve().parents[2]
HOST = "abc123.execute-api.us-east-1.amazonaws.com"
FROM = "support@shop.example.com"
OWN = {"host": HOST, "origin": f"https://{HOST}", "sec-fetch-site": "same-origin"}
FORM = {"content-type": "application/x-www-form-urlencoded"}


def _event(
    method: str, path_id: str = "", query: dict[str, str] | None = None, **more: Any
) -> dict[str, Any]:
    headers = more.pop("headers", {"host": HOST})
    return {
        "requestContext": {"http": {"method": method, "sourceIp": "198.51.100.9"}, "domainName": HOST},
        "pathParameters": {"id": path_id} if path_id else None,
        "queryStringParameters": query or None,
        "headers": headers,
        **more,
    }


def _hidden(body: str) -> dict[str, str]:
    return dict(re.findall(r'<input type=hidden name="([^"]+)" value="([^"]*)">', body))


@pytest.fixture
def app(aws: Aws, monkeypatch: pytest.MonkeyPatch) -> Any:
    aws.client("ses").verify_email_identity(EmailAddress=FROM)
    for name, value in {
        "APPROVALS_TABLE": aws.names["ApprovalsTable"],
        "DECISIONS_TABLE": aws.names["DecisionsTable"],
        "INBOX_TABLE": aws.inbox_table,
        "INBOX_QUEUE_URL": aws.queue_url,
        "LINK_RESEND_TABLE": aws.state_table,
        "SHOP_FROM_ADDRESS": FROM,
        "APPROVAL_LINK_SECRET_ARN": "env:TEST_LINK_SECRET",
        "TEST_LINK_SECRET": "link-secret-for-tests-0123456789abcdef",
        "LOCKGATE_CONFIG": str(ROOT / "lockgate.toml"),
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("APPROVAL_BASE_URL", raising=False)  # deployed, the callback knows only its path
    return load_approval_app()


def test_from_the_digest_page_to_a_decision_through_the_deployed_handler(app: Any, aws: Aws) -> None:
    # Given a refund waiting for alice and bob
    now = int(time.time())
    args = {"order_id": "A-2001", "amount": "80.00"}
    ProposalStore(aws.client("dynamodb"), aws.names["ApprovalsTable"]).propose(
        Proposal("ap_http", "helpdesk", "helpdesk#m1", "refund_order", args, fingerprint(args),
                 "refund $80.00 on order A-2001", "", ("refunds over $50 need a person",),
                 now, now + 86_400, 3_600)
    )  # fmt: skip
    alice = next(r for r in load_config(ROOT / "lockgate.toml").approvals.reviewers if r.id == "alice")
    digest_link = app.digest.link_for("alice", app.digest.items_for(alice))
    query = dict(parse_qsl(urlsplit(digest_link).query))

    # When alice opens her digest page: it lists the refund and no link that could decide it
    listed = app.http(_event("GET", query=query))
    assert listed["statusCode"] == 200 and "refund $80.00 on order A-2001" in listed["body"]
    assert "/approvals/ap_http" not in listed["body"]

    # When she asks for its link from the page: SES sends it to her, under the host she used
    fields = {**_hidden(listed["body"]), "approval": "ap_http"}
    # (a Host header the client wrote does not choose the link's host: API Gateway's domainName does)
    spoofed = {**OWN, **FORM, "host": "evil.example", "origin": "null"}
    resent = app.http(_event("POST", headers=spoofed, body=urlencode(fields)))
    assert resent["statusCode"] == 200
    ((to, text),) = [
        (m.destinations["ToAddresses"][0], m.body)
        for m in ses_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].sent_messages
    ]
    assert to == "alice@shop.example.com"
    (link,) = re.findall(r"https://\S+", text)
    assert urlsplit(link).netloc == HOST and urlsplit(link).path == "/approvals/ap_http"
    (entry,) = ReissueAudit(aws.client("dynamodb"), aws.state_table).entries()
    assert (entry.reviewer, entry.approval_id, entry.outcome, entry.source_ip) == (
        "alice", "ap_http", "sent", "198.51.100.9",
    )  # fmt: skip

    # When the link's page is opened and its form posted from another site: refused, nothing decided
    link_query = dict(parse_qsl(urlsplit(link).query))
    page = app.http(_event("GET", "ap_http", link_query))
    assert page["statusCode"] == 200
    decision = urlencode({**_hidden(page["body"]), "decision": "approve"})
    forged = {**OWN, **FORM, "origin": "https://evil.example", "sec-fetch-site": "cross-site"}
    refused = app.http(_event("POST", "ap_http", headers=forged, body=decision))
    assert refused["statusCode"] == 403 and "This link cannot be used" in refused["body"]
    decisions = aws.client("dynamodb").scan(TableName=aws.names["DecisionsTable"])["Items"]
    assert decisions == []

    # When it is posted from its own page: alice's approval is the one decision
    approved = app.http(_event("POST", "ap_http", headers={**OWN, **FORM}, body=decision))
    assert approved["statusCode"] == 200 and "Approved" in approved["body"]
    decisions = aws.client("dynamodb").scan(TableName=aws.names["DecisionsTable"])["Items"]
    rows = [(d["reviewer"]["S"], d["verdict"]["S"]) for d in decisions if "verdict" in d]
    assert rows == [("alice", "approve")]  # beside it, the proposal's #state item
