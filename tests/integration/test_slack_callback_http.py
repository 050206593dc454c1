"""POST /approvals/slack through the deployed handler on moto: what is refused before any decision.

The happy paths (and bad signatures, replays, roles) run on the embedded stack in
test_slack_approvals.py; here, the answers that need no stack: not configured, oversized, a
response_url outside Slack, the signing secret missing. None decides anything; only the one Slack
signed (the response_url outside Slack) is kept, as a refusal.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from lockgate.actions.tools import fingerprint
from lockgate.approvals.proposals import Proposal, ProposalStore
from lockgate_infra.local.slack_stub import click_payload, signed_click
from tests.support import Aws
from tests.unit.test_approval_notify import load_approval_app

ROOT = Path(__file__).resolve().parents[2]
SIGNING = "slack-signing-secret-for-tests"
SLACK = """
[approvals.slack]
channel = "C0APPROVALS"
bot_token = "env:TEST_SLACK_BOT"
signing_secret = "env:TEST_SLACK_SIGNING"
team_id = "T0LOCAL"
"""
ARGS = {"order_id": "A-2001", "amount": "80.00"}


def _load(aws: Aws, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, config: str) -> Any:
    path = tmp_path / "lockgate.toml"
    text = (ROOT / "lockgate.toml").read_text(encoding="utf-8")
    path.write_text(
        text.replace(
            'roles = ["refunds", "support"]\n', 'roles = ["refunds", "support"]\nslack_user = "U0ALICE01"\n'
        )
        + config
    )
    for name, value in {
        "APPROVALS_TABLE": aws.names["ApprovalsTable"],
        "DECISIONS_TABLE": aws.names["DecisionsTable"],
        "INBOX_TABLE": aws.inbox_table,
        "INBOX_QUEUE_URL": aws.queue_url,
        "APPROVAL_LINK_SECRET_ARN": "env:TEST_LINK_SECRET",
        "TEST_LINK_SECRET": "link-secret-for-tests-0123456789abcdef",
        "TEST_SLACK_SIGNING": SIGNING,
        "LOCKGATE_CONFIG": str(path),
    }.items():
        monkeypatch.setenv(name, value)
    now = int(time.time())
    proposal = Proposal("ap_slack", "support-inbox", "run-1", "refund_order", ARGS, fingerprint(ARGS),
                        "refund $80.00 on order A-2001", "", ("refunds over $50 need a person",),
                        now, now + 86_400, 3_600)  # fmt: skip
    ProposalStore(aws.client("dynamodb"), aws.names["ApprovalsTable"]).propose(proposal)
    return load_approval_app()


def _event(body: bytes, headers: dict[str, str]) -> dict[str, Any]:
    return {
        "routeKey": "POST /approvals/slack",
        "requestContext": {"http": {"method": "POST", "sourceIp": "198.51.100.9"}},
        "pathParameters": None,
        "headers": headers,
        "body": body.decode(),
        "isBase64Encoded": False,
    }


def _signed(response_url: str = "https://hooks.slack.com/actions/T0/1/x", **more: Any) -> dict[str, Any]:
    payload = click_payload("U0ALICE01", "lockgate_approve", f"ap_slack|{fingerprint(ARGS)}", response_url)
    payload.update(more)
    return _event(*signed_click(payload, SIGNING))


def _rows(aws: Aws) -> list[str]:
    """Every Decisions row's partition and sort key, and every inbox item's key."""
    decisions = aws.client("dynamodb").scan(TableName=aws.names["DecisionsTable"])["Items"]
    inbox = aws.client("dynamodb").scan(TableName=aws.inbox_table)["Items"]
    rows = [f"{d['approval_id']['S']} {d['reviewer']['S']}" for d in decisions]
    return rows + [i["pk"]["S"] for i in inbox]


def _nothing_written(aws: Aws) -> bool:
    return _rows(aws) == []


def test_given_no_slack_section_then_the_route_is_not_found(aws, monkeypatch, tmp_path) -> None:
    app = _load(aws, monkeypatch, tmp_path, "")
    answer = app.http(_signed())
    assert answer["statusCode"] == 404
    assert _nothing_written(aws)


@pytest.mark.parametrize(
    ("event", "status", "kept"),
    [
        # Signed, but the answer would go elsewhere: Slack vouches for it, so the refusal is kept.
        (lambda: _signed("https://evil.example/collect"), 400, ["ap_slack refused#"]),
        (lambda: _signed(padding="x" * 70_000), 413, []),  # too big to check: nothing to attribute
        (lambda: _event(b"payload=%7B%7D", {"content-type": "application/x-www-form-urlencoded"}), 401, []),
    ],
    ids=["response_url outside Slack", "oversized", "unsigned"],
)
def test_given_a_request_that_fails_a_check_then_a_neutral_answer_and_nothing_is_decided(
    aws, monkeypatch, tmp_path, event, status, kept
) -> None:
    app = _load(aws, monkeypatch, tmp_path, SLACK)
    answer = app.http(event())
    assert (answer["statusCode"], answer["body"]) == (status, '{"error":"request refused"}')
    # (each row's partition and the start of its sort key): no decision, no inbox event
    assert [row[: row.index("#") + 1] for row in _rows(aws)] == kept


def test_given_the_signing_secret_is_missing_then_503_and_nothing_is_written(
    aws, monkeypatch, tmp_path
) -> None:
    app = _load(aws, monkeypatch, tmp_path, SLACK)
    monkeypatch.delenv("TEST_SLACK_SIGNING")
    answer = app.http(_signed())
    assert answer["statusCode"] == 503 and SIGNING not in answer["body"]
    assert _nothing_written(aws)
