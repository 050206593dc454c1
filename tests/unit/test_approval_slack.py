"""Slack approvals' pure parts: the click parser (strict, size-limited) and its workspace check, the
message (escaped, no secrets, its text true to each state), the response_url check and the Web API
client. The whole flow is in tests/integration/test_slack_approvals.py on the embedded stack; what
is kept and updated, on moto, in tests/integration/test_slack_messages.py."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

import pytest

from lockgate.actions.tools import fingerprint
from lockgate.approvals.decisions import Choice, DecisionRecord, State
from lockgate.approvals.proposals import Proposal
from lockgate.approvals.slack_api import ResponseUrl, SlackApiError, SlackWebApi, check_base
from lockgate.approvals.slack_messages import button_value, message_for, proposal_blocks
from lockgate.approvals.slack_payload import MAX_BODY_BYTES, parse_click
from lockgate.approvals.versions import new_version
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
    assert (click.team_id, click.user_team_id, click.enterprise_id, click.who) == (
        "T0LOCAL",
        "T0LOCAL",
        "",
        "T0LOCAL/U0ALICE01",
    )


def _from(team: Any, user_team: Any = None, enterprise: Any = None) -> dict[str, Any]:
    payload = click_payload("U0ALICE01", "lockgate_approve", VALUE, HOOK)
    payload["team"] = team if team is None else {"id": team}
    payload["user"]["team_id"] = user_team
    payload["enterprise"] = enterprise if enterprise is None else {"id": enterprise}
    return payload


@pytest.mark.parametrize(
    ("payload", "pinned", "decides"),
    [
        (_from("T0PINNED", "T0PINNED"), ("T0PINNED", None), True),
        (_from("T0PINNED"), ("T0PINNED", None), True),  # no user.team_id sent: the team decides
        (_from("T0OTHER", "T0OTHER"), ("T0PINNED", None), False),  # another workspace, same user id
        (_from("T0PINNED", "T0OTHER"), ("T0PINNED", None), False),  # a guest from another workspace
        (_from(None, "T0PINNED"), ("T0PINNED", None), False),  # no workspace confirmed
        (_from("T0PINNED", "T0PINNED", "E0ORG"), ("T0PINNED", "E0ORG"), True),
        (_from("T0PINNED", "T0PINNED", "E0ELSE"), ("T0PINNED", "E0ORG"), False),
        (_from("T0PINNED", "T0PINNED"), ("T0PINNED", "E0ORG"), False),  # the org is pinned: it must say so
    ],
)
def test_given_a_click_then_only_the_pinned_workspace_and_org_may_decide(
    payload: dict[str, Any], pinned: tuple[str, str | None], decides: bool
) -> None:
    click = parse_click(_form(payload), FORM)
    assert click is not None
    assert click.from_workspace(*pinned) is decides


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
        (_form(_with(team={"id": "t0lower"})), FORM),  # not a workspace id as Slack writes one
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


def _decided(reviewer: str, verdict: Choice, at: int) -> DecisionRecord:
    return DecisionRecord("ap_slack", reviewer, verdict, at, PROPOSAL.fingerprint, "slack")


TWO = Proposal(**{**PROPOSAL.__dict__, "summary": "refund $80.00 on order A-2001", "reviewers_required": 2})
AT = 1_700_000_000 + 120  # 22:15 UTC


@pytest.mark.parametrize(
    ("decisions", "state", "text", "buttons"),
    [
        (
            [],
            State.PENDING,
            "Approval needed (support-inbox): refund $80.00 on order A-2001. "
            "Approve or Reject in this message; nothing happens unless it is approved.",
            True,
        ),
        (
            [_decided("alice", Choice.APPROVE, AT)],
            State.PENDING,
            "1 of 2 approvals (alice at 22:15 UTC) — another reviewer must approve before it runs "
            "(support-inbox: refund $80.00 on order A-2001)",
            True,
        ),
        (
            [_decided("alice", Choice.APPROVE, AT), _decided("bob", Choice.APPROVE, AT + 60)],
            State.APPROVED,
            "Approved by alice and bob at 22:16 UTC — runs once "
            "(support-inbox: refund $80.00 on order A-2001)",
            False,
        ),
        (
            [_decided("bob", Choice.REJECT, AT)],
            State.REJECTED,
            "Rejected by bob at 22:15 UTC — it will not happen "
            "(support-inbox: refund $80.00 on order A-2001)",
            False,
        ),
        (
            [],
            State.EXPIRED,
            "Expired — nobody decided in time; it will not happen "
            "(support-inbox: refund $80.00 on order A-2001)",
            False,
        ),
    ],
    ids=["pending", "1 of 2", "approved", "rejected", "expired"],
)
def test_given_each_state_then_the_message_text_says_what_its_blocks_say(
    decisions: list[DecisionRecord], state: State, text: str, buttons: bool
) -> None:
    shown, blocks = message_for(TWO, [], decisions, state)
    # The text is what a notification, a screen reader and the channel list show: it must be true
    assert shown == text
    assert "link" not in shown
    assert ('"type": "actions"' in json.dumps(blocks)) is buttons
    header = blocks[0]["text"]["text"]
    assert header.startswith("*Approval needed*" if buttons else f"*{state.value.capitalize()}*")
    # Only while it waits does the message say nothing has happened; decided, its outcome line says
    assert ("Nothing has happened yet." in json.dumps(blocks)) is (state is State.PENDING)


def test_given_an_edited_version_then_the_message_shows_its_changes_and_its_buttons_decide_it() -> None:
    edit = new_version(1, TWO.args, {**TWO.args, "amount": "40.00"}, "bob", AT)
    text, blocks = message_for(TWO, [], [], State.PENDING, [edit])
    # The summary is the proposal's own (no tool on this side to word an edit): the change follows it
    assert text.startswith(
        "Approval needed (support-inbox): refund $80.00 on order A-2001; "
        "edited by bob: amount 80.00 → 40.00. "
    )
    shown = json.dumps(blocks, ensure_ascii=False)
    assert "Edited by bob at 22:15 UTC (version 1): amount 80.00 → 40.00" in shown
    # A click decides the version it showed
    assert button_value(TWO, [edit]) == f"ap_slack|{edit.fingerprint}" != button_value(TWO)
    assert f'"value": "ap_slack|{edit.fingerprint}"' in shown


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


def test_given_the_web_api_then_metadata_updates_and_history_pages_are_sent_as_slack_reads_them() -> None:
    calls: list[tuple[str, dict[str, Any]]] = []
    answers = iter(
        [
            b'{"ok": true, "ts": "1.000001"}',
            b'{"ok": true}',
            b'{"ok": true, "messages": [{"ts": "1.000001"}], "has_more": true,'
            b' "response_metadata": {"next_cursor": "page2"}}',
            b'{"ok": true, "messages": [], "has_more": false, "response_metadata": {"next_cursor": ""}}',
        ]
    )

    def post(url: str, body: bytes, headers: Mapping[str, str]) -> bytes:
        calls.append((url.rsplit("/", 1)[1], json.loads(body)))
        return next(answers)

    api = SlackWebApi(lambda: "xoxb-token", post, "https://slack.example/api")
    metadata = {"event_type": "lockgate_approval", "event_payload": {"approval_id": "ap_1"}}
    assert api.post_message("C0123", "text", [], metadata) == "1.000001"
    api.update_message("C0123", "1.000001", "new text", [])
    assert api.history("C0123", 1.5) == ([{"ts": "1.000001"}], "page2")
    assert api.history("C0123", 1.5, "page2") == ([], "")
    assert calls == [
        ("chat.postMessage", {"channel": "C0123", "text": "text", "blocks": [], "unfurl_links": False,
                              "metadata": metadata}),
        ("chat.update", {"channel": "C0123", "ts": "1.000001", "text": "new text", "blocks": []}),
        ("conversations.history", {"channel": "C0123", "oldest": "1.500000", "include_all_metadata": True,
                                   "limit": 100}),
        ("conversations.history", {"channel": "C0123", "oldest": "1.500000", "include_all_metadata": True,
                                   "limit": 100, "cursor": "page2"}),
    ]  # fmt: skip
