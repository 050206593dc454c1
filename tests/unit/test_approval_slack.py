"""Slack approvals' pure parts: the click parser (strict, size-limited), the message (escaped, no
secrets), the response_url check and the Web API client. The whole flow is in
tests/integration/test_slack_approvals.py on the embedded stack."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

import pytest

from lockgate.actions.tools import fingerprint
from lockgate.approvals.decisions import Choice
from lockgate.approvals.proposals import Proposal
from lockgate.approvals.slack_api import ResponseUrl, SlackApiError, SlackWebApi, check_base
from lockgate.approvals.slack_messages import button_value, proposal_blocks
from lockgate.approvals.slack_payload import MAX_BODY_BYTES, parse_click
from lockgate.config import Reviewer
from lockgate.errors import ConfigError
from lockgate_infra.local.slack_stub import click_payload

FORM = "application/x-www-form-urlencoded"
ARGS = {"order_id": "A-2001", "amount": "80.00"}
PROPOSAL = Proposal(
    "ap_slack", "support-inbox", "run-1", "refund_order", ARGS, fingerprint(ARGS),
    "refund $80.00 on order A-2001 <!channel>", "<https://evil.example|click> *now*",
    ("refunds over $50 need a person",), 1_700_000_000, 1_700_086_400, 3_600,
)  # fmt: skip
VALUE = button_value(PROPOSAL)
HOOK = "https://hooks.slack.com/actions/T0/1/abc"


def _form(payload: Any, **more: str) -> bytes:
    return urlencode(
        {"payload": payload if isinstance(payload, str) else json.dumps(payload), **more}
    ).encode()


def test_given_a_click_on_our_approve_button_then_it_parses_to_who_what_and_where() -> None:
    click = parse_click(_form(click_payload("U0ALICE01", "lockgate_approve", VALUE, HOOK)), FORM)
    assert click is not None
    assert (click.user, click.choice, click.approval_id, click.fingerprint, click.response_url) == (
        "U0ALICE01", Choice.APPROVE, "ap_slack", PROPOSAL.fingerprint, HOOK,
    )  # fmt: skip


def _with(**changes: Any) -> dict[str, Any]:
    payload = click_payload("U0ALICE01", "lockgate_approve", VALUE, HOOK)
    payload.update(changes)
    return payload


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (_form(_with()), "application/json"),  # Slack posts a form
        (_form(_with(), payload2="x"), FORM),  # an extra field
        (_form(_with()) + b"&payload=" + _form(_with())[8:], FORM),  # two payloads
        (_form("not json"), FORM),
        (_form(_with(type="view_submission")), FORM),  # not a button click
        (_form(_with(user={"id": "alice"})), FORM),  # not a Slack user id
        (_form(_with(user={"id": 12345})), FORM),  # strict: no coercion from a number
        (_form(_with(actions=[])), FORM),
        (_form(_with(actions=[_with()["actions"][0]] * 2)), FORM),  # one click is one action
        (_form(click_payload("U0ALICE01", "delete_everything", VALUE, HOOK)), FORM),  # not our button
        (_form(click_payload("U0ALICE01", "lockgate_approve", "ap_slack|short", HOOK)), FORM),
        (_form(_with(response_url="x" * 1_001)), FORM),
        (_form(_with(padding="x" * MAX_BODY_BYTES)), FORM),  # over the size limit
        (b"payload=%ff%fe", FORM),  # not UTF-8
    ],
)
def test_given_anything_but_a_click_on_our_buttons_then_nothing_parses(
    body: bytes, content_type: str
) -> None:
    assert parse_click(body, content_type) is None


def test_given_a_proposal_then_the_message_escapes_what_slack_would_parse_and_carries_no_secret() -> None:
    alice = Reviewer("alice", "Alice", ("refunds",), "alice@shop.example.com", "U0ALICE01")
    blocks = proposal_blocks(PROPOSAL, [alice, Reviewer("bob", "Bob", ("refunds",))])
    text = json.dumps(blocks)
    # The summary's "<!channel>" cannot ping anyone: it is escaped
    assert "<!channel>" not in text and "&lt;!channel&gt;" in text
    # The assistant's reason is plain text, labelled unverified: its link markup stays inert
    (reason,) = [
        e for b in blocks if b["type"] == "context" for e in b["elements"] if e["type"] == "plain_text"
    ]
    assert reason["text"] == "The assistant's reason (unverified): <https://evil.example|click> *now*"
    # Mapped reviewers are mentioned; the rest are named
    assert "<@U0ALICE01>, bob" in text
    # The buttons carry the approval id and fingerprint only
    (actions,) = [b for b in blocks if b["type"] == "actions"]
    assert [(e["action_id"], e["value"]) for e in actions["elements"]] == [
        ("lockgate_approve", f"ap_slack|{PROPOSAL.fingerprint}"),
        ("lockgate_reject", f"ap_slack|{PROPOSAL.fingerprint}"),
    ]
    assert "alice@shop.example.com" not in text


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        (HOOK, True),
        ("https://hooks.slack.com.evil.example/actions/1", False),
        ("http://hooks.slack.com/actions/1", False),
        ("https://evil.example/https://hooks.slack.com/", False),
        ("https://hooks.slack.com/actions/../../elsewhere", False),
        ("https://hooks.slack.com/" + "a" * 1_000, False),
    ],
)
def test_given_a_response_url_then_only_slacks_response_host_is_answered(url: str, allowed: bool) -> None:
    sent: list[str] = []
    responses = ResponseUrl(lambda u, body, headers: sent.append(u) or b"ok")
    assert responses.allows(url) is allowed
    if not allowed:
        with pytest.raises(ValueError, match="response host"):
            responses.send(url, {"text": "x"})
        assert sent == []


@pytest.mark.parametrize("url", ["http://slack.example/api", "ftp://127.0.0.1/api", "https:///api"])
def test_given_a_slack_url_that_is_not_https_then_it_is_refused_except_plain_http_on_loopback(
    url: str,
) -> None:
    with pytest.raises(ConfigError, match="must be https"):
        check_base(url)
    assert check_base("http://127.0.0.1:9/api/") == "http://127.0.0.1:9/api"


def test_given_the_web_api_then_the_token_goes_in_a_header_and_a_refusal_names_slacks_error_only() -> None:
    calls: list[tuple[str, dict[str, Any], Mapping[str, str]]] = []
    answers = iter([b'{"ok": true, "ts": "1.2"}', b'{"ok": false, "error": "channel_not_found"}', b"<html>"])

    def post(url: str, body: bytes, headers: Mapping[str, str]) -> bytes:
        calls.append((url, json.loads(body), headers))
        return next(answers)

    api = SlackWebApi(lambda: "xoxb-secret-token", post, "https://slack.example/api/")
    assert api.post_message("C0123", "fallback", [{"type": "divider"}]) == "1.2"
    url, body, headers = calls[0]
    assert url == "https://slack.example/api/chat.postMessage"
    assert body == {
        "channel": "C0123",
        "text": "fallback",
        "blocks": [{"type": "divider"}],
        "unfurl_links": False,
    }
    assert headers["Authorization"] == "Bearer xoxb-secret-token"
    with pytest.raises(SlackApiError, match="channel_not_found") as refused:
        api.post_message("C0123", "fallback", [])
    assert "xoxb" not in str(refused.value)
    with pytest.raises(SlackApiError, match="not JSON"):
        api.post_message("C0123", "fallback", [])
