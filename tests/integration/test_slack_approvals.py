"""Approving in Slack, end to end on the embedded stack, with a stand-in Slack on loopback.

grace's signed helpdesk email asks for a refund of A-2001; the agent proposes it; the notifier
posts one message with Approve / Reject buttons to the configured channel (the stub records it).
Each click is the interaction request Slack would send: form-encoded, signed with the app's signing
secret, from a workspace, carrying the button's value and a response_url. The clicker is answered
privately; the message itself is updated by the notifier from the Decisions stream, whoever
decided and however (a click, a link's page, the CLI). The Decisions rows (decisions and refused
clicks), the approval.decided inbox event, the refund and the messages the stub recorded are what
the tests assert.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from lockgate.approvals.notify import send_post
from lockgate.approvals.refusals import Why
from lockgate.approvals.slack import CANNOT_DECIDE
from lockgate.approvals.slack_api import SlackApiError, SlackWebApi
from lockgate.config import load_config
from lockgate_infra.local.approval_walk import decide, local_signer, pending_proposals
from lockgate_infra.local.demo import _send, samples
from lockgate_infra.local.devsecrets import SLACK_DEV_SECRETS, dev_secret
from lockgate_infra.local.loopback import request
from lockgate_infra.local.model import local_model
from lockgate_infra.local.run import read_local_state, seed_secrets
from lockgate_infra.local.slack_stub import (
    LOCAL_TEAM,
    SlackCall,
    SlackStub,
    click_payload,
    local_slack,
    signed_click,
    slack_environment,
)
from lockgate_infra.local.stack import LocalStack
from lockgate_infra.local.workflows import seed_workflows
from tests.support import local_stack_in_thread, run_cli

ROOT = Path(__file__).resolve().parents[2]
SUMMARY = "refund $80.00 USD on order A-2001"  # code-built, with the currency
CHANNEL = "C0APPROVALS"
ALICE, BOB, CAROL, STRANGER = "U0ALICE01", "U0BOB0001", "U0CAROL01", "U0STRANGER"
# What the README's "Approving in Slack" adds to lockgate.toml (carol: support only, no refunds role).
SLACK_CONFIG = f"""
[approvals.slack]
channel = "{CHANNEL}"
bot_token = "secretsmanager:lockgate/slack/bot"
signing_secret = "secretsmanager:lockgate/slack/signing"
team_id = "{LOCAL_TEAM}"

[[approvals.reviewers]]
id = "carol"
name = "Carol (support)"
roles = ["support"]
slack_user = "{CAROL}"
"""


def _config(tmp_path: Path, reviewers_required: int) -> Path:
    """The shipped lockgate.toml with Slack user ids for alice and bob, the Slack app, and carol."""
    text = (ROOT / "lockgate.toml").read_text(encoding="utf-8")
    text = text.replace(
        'email = "alice@shop.example.com"\n', f'email = "alice@shop.example.com"\nslack_user = "{ALICE}"\n'
    )
    text = text.replace(
        'email = "bob@shop.example.com"\n', f'email = "bob@shop.example.com"\nslack_user = "{BOB}"\n'
    )
    text = text.replace(
        "run_within_hours = 1 ", f"reviewers_required = {reviewers_required}\nrun_within_hours = 1 "
    )
    path = tmp_path / "lockgate.toml"
    path.write_text(text + SLACK_CONFIG, encoding="utf-8")
    return path


Stack = tuple[LocalStack, SlackStub, str]


@pytest.fixture
def slack_stack(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Stack]:
    """The embedded stack with [approvals.slack] on, grace's refund proposed and posted to Slack."""
    required = getattr(request, "param", 1)
    with SlackStub(SLACK_DEV_SECRETS["bot_token"]) as slack, local_model("demo", os.environ) as model:
        environment = {
            "POWERTOOLS_LOG_LEVEL": "ERROR",
            "POWERTOOLS_METRICS_DISABLED": "true",
            "APPROVAL_CHANNELS": "print",
            "SLACK_API_URL": slack.api_url,
            "SLACK_RESPONSE_URL_PREFIX": slack.response_prefix,
            **model.environment,
        }
        with LocalStack(config_path=_config(tmp_path, required), environment=environment) as stack:
            secrets = seed_secrets(stack)
            seed_workflows(stack)
            gateway = stack.start_gateway(0)
            stack.start_pollers(wait_seconds=0)
            (email,) = [s for r in samples(int(time.time())) for s in r if s.delivery_id == "msg-demo-2"]
            status, reply = _send(
                email, gateway.url, load_config(stack.config_path), secrets, int(time.time())
            )
            assert status == 200, reply
            assert stack.drain(timeout=30)
            yield stack, slack, gateway.url


def _posted(slack: SlackStub) -> SlackCall:
    (message,) = slack.of_kind("chat.postMessage")
    return message


def _button(message: SlackCall, action_id: str) -> str:
    (actions,) = [b for b in message.body["blocks"] if b["type"] == "actions"]
    return str(next(e["value"] for e in actions["elements"] if e["action_id"] == action_id))


def _click(
    stack: Stack, user: str, action_id: str = "lockgate_approve", **signing: Any
) -> tuple[int, Callable[[], list[SlackCall]]]:
    """Click a button of the posted message as ``user``; the status and that click's recorded answers."""
    _, slack, gateway = stack
    name = f"click-{user}-{time.monotonic_ns()}"
    team = signing.pop("team", LOCAL_TEAM)
    value = _button(_posted(slack), action_id)
    payload = click_payload(user, action_id, value, slack.response_url(name), team=team)
    secret = signing.pop("secret", SLACK_DEV_SECRETS["signing_secret"])
    body, headers = signed_click(payload, secret, **signing)
    status, _ = request(f"{gateway}/approvals/slack", body, headers)
    return status, lambda: [c for c in slack.of_kind("response") if c.path.endswith(name)]


def _decisions(stack: LocalStack) -> list[tuple[str, str, str]]:
    items = stack.client("dynamodb").scan(TableName=stack.resources["DecisionsTable"])["Items"]
    return sorted((i["reviewer"]["S"], i["verdict"]["S"], i["via"]["S"]) for i in items if "verdict" in i)


def _refunds(stack: LocalStack) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = stack.client("dynamodb").scan(
        TableName=stack.resources["ShopPaymentsTable"]
    )["Items"]
    return items


def _decided_events(stack: LocalStack) -> list[str]:
    items = stack.client("dynamodb").scan(TableName=stack.resources["InboxTable"])["Items"]
    return sorted(i["pk"]["S"] for i in items if i["pk"]["S"].startswith("approval#"))


def _text(call: SlackCall) -> str:
    return json.dumps(call.body["blocks"]) + call.body["text"]


def _shown(slack: SlackStub) -> dict[str, Any]:
    """The one message in the channel, as it shows now (after every update)."""
    (message,) = slack.messages.values()
    return message


def _refusals(stack: LocalStack) -> list[tuple[str, str]]:
    """Who was refused and why: the refused-click rows of the Decisions table."""
    items = stack.client("dynamodb").scan(TableName=stack.resources["DecisionsTable"])["Items"]
    return sorted((i["who"]["S"], i["why"]["S"]) for i in items if i.get("kind", {}).get("S") == "refusal")


def _has_buttons(message: dict[str, Any]) -> bool:
    return '"type": "actions"' in json.dumps(message["blocks"])


def test_the_notifier_posts_one_message_with_buttons_carrying_no_secret(slack_stack: Stack) -> None:
    stack, slack, _ = slack_stack
    (proposal,) = pending_proposals(stack)
    message = _posted(slack)
    # Then it went to the configured channel with the bot token, and reads as the proposal
    assert message.authorized and message.body["channel"] == CHANNEL
    assert SUMMARY in _text(message) and "unverified" in _text(message)
    assert f"<@{ALICE}>" in _text(message) and f"<@{BOB}>" in _text(message)
    # And its notification text is true to it: buttons to press, no link to open
    assert message.body["text"] == (
        f"Approval needed (support-inbox): {SUMMARY}. "
        "Approve or Reject in this message; nothing happens unless it is approved."
    )
    # And each button's value is the approval id and the argument fingerprint, nothing more
    value = f"{proposal.approval_id}|{proposal.fingerprint}"
    assert _button(message, "lockgate_approve") == _button(message, "lockgate_reject") == value
    assert message.body["metadata"]["event_payload"] == {"approval_id": proposal.approval_id}


def test_a_mapped_reviewer_approves_in_slack_and_the_refund_runs_once(slack_stack: Stack) -> None:
    stack, slack, _ = slack_stack
    (proposal,) = pending_proposals(stack)
    assert _refunds(stack) == []
    # When alice clicks Approve
    clicked_at = int(time.time()) // 60 * 60
    status, answers = _click(slack_stack, ALICE)
    # Then her decision is recorded, as from Slack, and the worker is told
    assert status == 200
    assert _decisions(stack) == [("alice", "approve", "slack")]
    assert _decided_events(stack) == [f"approval#{proposal.approval_id}#approved"]
    # And only she is told what her click did
    (answer,) = answers()
    assert answer.body == {
        "response_type": "ephemeral",
        "replace_original": False,
        "text": "Recorded: you approved it, and it runs once.",
    }
    # And the refund runs exactly once
    assert stack.drain(timeout=30)
    (refund,) = _refunds(stack)
    assert refund["order_id"]["S"] == "A-2001"
    # And the one message in the channel now shows the outcome in place of the buttons (updated)
    # (the decision's minute: the one the click was in, or the next if the minute turned meanwhile)
    minutes = {
        time.strftime("%H:%M", time.gmtime(clicked_at + d)) for d in (0, 60) if clicked_at + d <= time.time()
    }
    message = _shown(slack)
    assert message["text"] in {
        f"Approved by alice at {m} UTC — runs once (support-inbox: {SUMMARY})" for m in minutes
    }
    assert not _has_buttons(message)
    assert len(slack.of_kind("chat.postMessage")) == 1 and len(slack.of_kind("chat.update")) == 1

    # When the same click arrives again (a double click, or someone replayed it within five minutes)
    status, answers = _click(slack_stack, ALICE)
    # Then still one decision and one refund; only alice is told her first decision stands
    assert status == 200
    assert _decisions(stack) == [("alice", "approve", "slack")]
    assert stack.drain(timeout=30)
    assert len(_refunds(stack)) == 1
    (again,) = answers()
    assert again.body == {
        "response_type": "ephemeral",
        "replace_original": False,
        "text": "This was already approved; nothing more is needed.",
    }
    # And the replay is kept: who, and why it was refused
    assert _refusals(stack) == [(f"{LOCAL_TEAM}/{ALICE}", Why.REPLAY.value)]
    assert len(slack.of_kind("chat.update")) == 1  # nothing new to show


@pytest.mark.parametrize(
    ("user", "team", "why"),
    [
        (STRANGER, LOCAL_TEAM, Why.NOT_A_REVIEWER),
        (CAROL, LOCAL_TEAM, Why.NO_ROLE),
        (ALICE, "T0OTHER", Why.OTHER_WORKSPACE),  # alice's user id, from a workspace that is not ours
    ],
    ids=["not a reviewer", "no role", "another workspace"],
)
def test_a_click_by_someone_who_may_not_decide_is_refused_privately_neutrally_and_kept(
    slack_stack: Stack, user: str, team: str, why: Why
) -> None:
    stack, slack, _ = slack_stack
    # When someone who may not decide this refund clicks Approve
    status, answers = _click(slack_stack, user, team=team)
    # Then only they are told, in words that say nothing of how Lockgate is set up
    assert status == 200
    (answer,) = answers()
    assert answer.body == {"response_type": "ephemeral", "replace_original": False, "text": CANNOT_DECIDE}
    # And nothing is decided or run, the message is unchanged, and the refused click is kept
    assert _decisions(stack) == []
    assert _decided_events(stack) == []
    assert stack.drain(timeout=30)
    assert _refunds(stack) == []
    assert slack.of_kind("chat.update") == [] and _has_buttons(_shown(slack))
    assert _refusals(stack) == [(f"{team}/{user}", why.value)]


@pytest.mark.parametrize(
    "forgery",
    [
        {"secret": "not-the-signing-secret"},
        {"now": int(time.time()) - 600},  # signed ten minutes ago: outside the five-minute window
    ],
    ids=["bad signature", "stale timestamp"],
)
def test_a_click_slack_did_not_sign_just_now_is_refused_and_changes_nothing(
    slack_stack: Stack, forgery: dict[str, Any]
) -> None:
    stack, slack, _ = slack_stack
    status, answers = _click(slack_stack, ALICE, **forgery)
    assert status == 401
    assert answers() == []  # not even the clicker is answered: the payload was never read
    # Nothing is written at all: not a decision, not a refusal (nothing in it can be trusted)
    items = stack.client("dynamodb").scan(TableName=stack.resources["DecisionsTable"])["Items"]
    assert items == []
    assert stack.drain(timeout=30)
    assert _refunds(stack) == []


@pytest.mark.parametrize("slack_stack", [2], indirect=True)
def test_a_two_person_approval_shows_1_of_2_in_the_same_message_until_a_link_completes_it(
    slack_stack: Stack,
) -> None:
    stack, slack, gateway = slack_stack
    (proposal,) = pending_proposals(stack)
    # When alice approves in Slack a refund that needs two people
    status, answers = _click(slack_stack, ALICE)
    assert status == 200
    assert answers()[0].body["text"] == (
        "Recorded: your approval. Another reviewer must also approve before it runs."
    )
    assert stack.drain(timeout=30)
    # Then the same message (not a new one) says 1 of 2 in its text, keeps its buttons, and nothing runs
    message = _shown(slack)
    assert message["text"].startswith("1 of 2 approvals (alice at ")
    assert message["text"].endswith(
        f" — another reviewer must approve before it runs (support-inbox: {SUMMARY})"
    )
    assert _has_buttons(message)
    assert len(slack.of_kind("chat.postMessage")) == 1
    assert _decided_events(stack) == []
    assert _refunds(stack) == []
    # When bob approves from his personal link's page (not in Slack)
    config = load_config(stack.config_path).approvals
    link = local_signer(stack, config, f"{gateway}/approvals").links_for(proposal)["bob"]
    steps = decide(link, "approve")
    assert [s.status for s in steps] == [200, 200]
    # Then the message shows both approvals, without buttons, and the refund runs once
    assert stack.drain(timeout=30)
    message = _shown(slack)
    assert message["text"].startswith("Approved by alice and bob at ")
    assert not _has_buttons(message)
    assert _decisions(stack) == [("alice", "approve", "slack"), ("bob", "approve", "link")]
    assert len(_decided_events(stack)) == 1
    assert len(_refunds(stack)) == 1
    assert len(slack.of_kind("chat.postMessage")) == 1 and len(slack.of_kind("chat.update")) == 2


def test_a_reject_click_settles_it_and_nothing_runs(slack_stack: Stack) -> None:
    stack, slack, _ = slack_stack
    status, answers = _click(slack_stack, BOB, "lockgate_reject")
    assert status == 200
    (answer,) = answers()
    assert answer.body["text"] == "Recorded: you rejected it; it will not happen."
    assert _decisions(stack) == [("bob", "reject", "slack")]
    assert stack.drain(timeout=30)
    assert _refunds(stack) == []
    assert _shown(slack)["text"].startswith("Rejected by bob at ")


def test_lockgate_local_runs_a_slack_stub_only_when_slack_approvals_are_configured(tmp_path: Path) -> None:
    with local_slack(ROOT / "lockgate.toml") as stub:
        assert stub is None and slack_environment(stub) == {}
    lines: list[str] = []
    with local_slack(_config(tmp_path, 1), lines.append) as stub:
        # The notifier's own client, over loopback HTTP, with the development bot token
        api_url = slack_environment(stub)["SLACK_API_URL"]
        api = SlackWebApi(lambda: SLACK_DEV_SECRETS["bot_token"], send_post, api_url)
        ts = api.post_message(CHANNEL, "hello", [])
        with pytest.raises(SlackApiError, match="invalid_auth"):
            SlackWebApi(lambda: "xoxb-wrong", send_post, api_url).post_message(CHANNEL, "x", [])
    assert lines == [
        f"[slack] chat.postMessage to {CHANNEL} (message {ts}): hello",
        "[slack] chat.postMessage refused (invalid_auth): x",
    ]


def test_the_stand_in_shows_each_message_with_its_buttons_and_how_to_click_one(tmp_path: Path) -> None:
    # Given the notifier's message for a proposal, with its Approve / Reject buttons
    lines: list[str] = []
    value = "ap_1234|" + "f" * 64
    blocks = [{"type": "actions", "elements": [
        {"type": "button", "action_id": "lockgate_approve", "text": {"type": "plain_text", "text": "Approve"},
         "value": value},
        {"type": "button", "action_id": "lockgate_reject", "text": {"type": "plain_text", "text": "Reject"},
         "value": value},
    ]}]  # fmt: skip
    with SlackStub(SLACK_DEV_SECRETS["bot_token"], sink=lines.append) as stub:
        api = SlackWebApi(lambda: SLACK_DEV_SECRETS["bot_token"], send_post, stub.api_url)
        # When it is posted, then answered through a click's response_url
        ts = api.post_message(CHANNEL, "Approval needed: refund $80.00", blocks)
        answer = json.dumps({"replace_original": True, "text": "Approved by alice"}).encode()
        send_post(stub.response_url("click-1", ts), answer, {"content-type": "application/json"})
        shown = stub.snapshot("/messages")
    # Then the console shows the message, each button's label, action id and value, and the command
    assert lines == [
        f"[slack] chat.postMessage to {CHANNEL} (message {ts}): Approval needed: refund $80.00",
        f"[slack]   button 'Approve': action_id lockgate_approve, value {value}",
        f"[slack]   button 'Reject': action_id lockgate_reject, value {value}",
        "[slack]   click: lockgate local slack click lockgate_approve ap_1234 --user SLACK_USER_ID",
        f"[slack] answer to a click, replacing message {ts}: Approved by alice",
    ]
    # And the channel holds the message as the answer replaced it (what `lockgate local slack messages` reads)
    assert shown == [{"channel": CHANNEL, "ts": ts, "text": "Approved by alice", "blocks": []}]


@pytest.fixture
def slack_local(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalStack]:
    """`lockgate local` with [approvals.slack], grace's refund proposed and posted; this process's CLI
    names its port."""
    with local_stack_in_thread(config_path=_config(tmp_path, 1)) as stack:
        monkeypatch.setenv("LOCKGATE_LOCAL_PORT", str(stack.gateway.port))
        (email,) = [s for r in samples(int(time.time())) for s in r if s.delivery_id == "msg-demo-2"]
        config = load_config(stack.config_path)
        secrets = {name: dev_secret(source) for name, source in config.sources.items()}
        status, reply = _send(email, stack.gateway.url, config, secrets, int(time.time()))
        assert status == 200, reply
        assert stack.drain(timeout=30)
        yield stack


def test_a_click_from_the_command_line_is_signed_as_slack_signs_it_and_decides(
    slack_local: LocalStack, capsys: pytest.CaptureFixture[str]
) -> None:
    stack = slack_local
    (proposal,) = pending_proposals(stack)
    # Given the state file names the Slack stand-in, and it holds the notifier's message
    state = read_local_state(stack.root, stack.gateway.port)  # type: ignore[union-attr]
    assert state is not None
    (slack,) = [s for s in state["status"]["stand_ins"] if s["kind"] == "slack"]
    code, listed = run_cli("local", "slack", "messages")
    assert code == 0 and f"value {proposal.approval_id}|{proposal.fingerprint}" in listed
    # When alice clicks Approve from the command line, naming the button by the approval id
    code, out = run_cli("local", "slack", "click", "lockgate_approve", proposal.approval_id, "--user", ALICE)
    # Then the stack accepted it as Slack's, recorded her decision, and answered the click
    assert code == 0, out
    first, answered = out.splitlines()
    assert first.startswith("clicked 'Approve' (lockgate_approve) on message ") and first.endswith(
        f" as {ALICE} of {LOCAL_TEAM}: POST {stack.gateway.url}/approvals/slack -> 200"
    )
    assert answered == "answered (only the clicker sees it): Recorded: you approved it, and it runs once."
    assert _decisions(stack) == [("alice", "approve", "slack")]
    assert stack.drain(timeout=30)
    assert len(_refunds(stack)) == 1
    # And the message in the stand-in now shows the outcome, without buttons (the notifier updated it)
    code, listed = run_cli("local", "slack", "messages")
    assert "Approved by alice at " in listed and "button" not in listed
    assert slack["url"].startswith("http://127.0.0.1:")
    # And a click on a button no message has, or as someone who is not a Slack user id, is one line, exit 2
    capsys.readouterr()
    assert run_cli("local", "slack", "click", "lockgate_approve", "ap_nope", "--user", ALICE)[0] == 2
    assert (
        run_cli("local", "slack", "click", "lockgate_reject", proposal.approval_id, "--user", "alice")[0] == 2
    )
    assert run_cli("local", "slack", "click", "lockgate_reject", proposal.approval_id, "--user", ALICE,
                   "--team", "acme")[0] == 2  # fmt: skip
    assert capsys.readouterr().err.splitlines() == [
        "lockgate: no message in the Slack stand-in has a button lockgate_approve whose value starts with "
        "'ap_nope'; `lockgate local slack messages` lists them",
        "lockgate: --user 'alice' is not a Slack user id (like U0ALICE01): a reviewer's slack_user",
        "lockgate: --team 'acme' is not a Slack workspace id (like T0123ABCD)",
    ]


def test_a_rejection_from_the_command_line_updates_the_slack_message_and_a_foreign_click_is_refused(
    slack_local: LocalStack,
) -> None:
    stack = slack_local
    (proposal,) = pending_proposals(stack)
    # When a click comes from another workspace, with alice's user id
    click = ("local", "slack", "click", "lockgate_approve", proposal.approval_id, "--user", ALICE)
    code, out = run_cli(*click, "--team", "T0OTHER")
    # Then the stack answers it (200), tells the clicker only that they can't, and keeps the refusal
    assert code == 0, out
    assert out.splitlines()[-1] == f"answered (only the clicker sees it): {CANNOT_DECIDE}"
    assert _decisions(stack) == [] and _refusals(stack) == [(f"T0OTHER/{ALICE}", "other-workspace")]
    # When bob rejects it from the command line
    config = str(stack.config_path)
    code, out = run_cli(
        "approvals", "reject", proposal.approval_id, "--as", "bob", "--yes", "--config", config
    )
    assert code == 0, out
    assert stack.drain(timeout=30)
    # Then the Slack message says so, and offers no buttons any more
    code, listed = run_cli("local", "slack", "messages")
    assert "Rejected by bob at " in listed and "button" not in listed
    assert _decisions(stack) == [("bob", "reject", "cli")]


def test_a_slack_command_on_a_stack_without_slack_says_how_to_add_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from lockgate_infra.cli import main as cli
    from lockgate_infra.local.run import state_path

    # Given a running stack (this process) whose config has no [approvals.slack]
    state = {"pid": os.getpid(), "port": 8799, "endpoint_url": "http://127.0.0.1:1", "resources": {},
             "config": str(ROOT / "lockgate.toml"), "status": {"pollers": [], "stand_ins": []}}  # fmt: skip
    state_path(tmp_path, 8799).parent.mkdir(parents=True)
    state_path(tmp_path, 8799).write_text(json.dumps(state), encoding="utf-8")
    monkeypatch.setattr(cli, "ROOT", tmp_path)
    monkeypatch.delenv("LOCKGATE_LOCAL_PORT", raising=False)
    # Then a click is one line saying what to add, exit 2
    assert cli.main(["local", "slack", "click", "lockgate_approve", "ap_1", "--user", ALICE]) == 2
    assert capsys.readouterr().err == (
        "lockgate: the local stack on port 8799 runs no Slack stand-in: add [approvals.slack] to "
        f"{ROOT / 'lockgate.toml'} (see docs/approvals.md) and start `lockgate local` again\n"
    )
