"""Approval notifications on Slack and Discord: short, ping no one, https only, retried on failure."""

from __future__ import annotations

import importlib.util
import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from lockgate.actions.tools import fingerprint
from lockgate.approvals import notify
from lockgate.approvals.notify import (
    NotificationFailed,
    Notifier,
    PrintChannel,
    WebhookChannel,
    message_text,
    post_json,
)
from lockgate.approvals.proposals import Proposal, ProposalStore
from lockgate.config import Reviewer
from lockgate.errors import ConfigError
from lockgate.telemetry import CountingMetrics
from tests.support import LOG, Aws

ROOT = Path(__file__).resolve().parents[2]
SLACK_URL = "https://hooks.slack.test/services/T0/B0/secret"
DISCORD_URL = "https://discord.test/api/webhooks/1/secret"
LINK = "https://example.test/approvals/ap_1?r=alice&sig=abc"
ALICE = Reviewer("alice", "Alice", ("refunds",), "alice@shop.example.com")
EMAIL_BODY = "Hi, my card 4111 1111 1111 1111 was charged twice, please refund"
ARGS = {"order_id": "A-2001", "amount": "80.00", "note": EMAIL_BODY}
PROPOSAL = Proposal(
    approval_id="ap_1",
    task="helpdesk",
    run_id="helpdesk#msg_1",
    tool="refund_order",
    args=ARGS,
    fingerprint=fingerprint(ARGS),
    summary="refund $80.00 on order A-2001 @everyone <!channel>",
    unverified_reason="The customer says the order never arrived.",
    why=("this run read an email from customer@example.com",),
    created_at=1_767_225_600,
    expires_at=1_767_225_600 + 86_400,
    run_within_seconds=3_600,
    requester="agent:helpdesk",
    call_id="toolu_1",
)


class Posts:
    """A fake ``post``: records what would have gone out, or fails like a webhook that is down."""

    def __init__(self, fail: bool = False) -> None:
        self.sent: list[tuple[str, dict[str, Any]]] = []
        self.fail = fail

    def __call__(self, url: str, body: bytes) -> None:
        if self.fail:
            raise OSError("webhook answered 500")
        self.sent.append((url, json.loads(body)))


def test_given_a_summary_with_everyone_when_sent_to_discord_then_it_pings_no_one() -> None:
    posts = Posts()
    # When the Discord channel notifies Alice
    WebhookChannel("discord", lambda: DISCORD_URL, posts).send(ALICE, PROPOSAL, LINK)
    # Then one post went to the webhook, with mentions switched off and no link: the channel is shared,
    # and a reviewer's link is a credential
    ((url, payload),) = posts.sent
    assert url == DISCORD_URL
    assert payload["allowed_mentions"] == {"parse": []}
    assert set(payload) == {"content", "allowed_mentions"}
    assert LINK not in payload["content"] and "your personal link is in your email" in payload["content"]
    assert "refund $80.00 on order A\\-2001" in payload["content"]


def test_given_a_summary_with_slack_mentions_when_sent_to_slack_then_the_payload_is_escaped_text() -> None:
    posts = Posts()
    WebhookChannel("slack", lambda: SLACK_URL, posts).send(ALICE, PROPOSAL, LINK)
    ((url, payload),) = posts.sent
    # Then Slack gets {"text": ...} only, and <!channel> arrives as literal text (no ping, no fake link)
    assert url == SLACK_URL and set(payload) == {"text"}
    assert "&lt;!channel&gt;" in payload["text"] and "<!channel>" not in payload["text"]
    assert LINK not in payload["text"]


@pytest.mark.parametrize("name", ["slack", "discord"])
def test_given_private_arguments_when_notified_then_the_text_has_only_the_summary(
    name: str,
) -> None:
    posts = Posts()
    WebhookChannel(name, lambda: SLACK_URL, posts).send(ALICE, PROPOSAL, LINK)
    text = json.dumps(posts.sent[0][1])
    # Then neither the email body, nor the assistant's words, nor why it was asked leaves the stack
    assert "4111" not in text and "charged twice" not in text
    assert "never arrived" not in text and "customer@example.com" not in text
    assert LINK not in text and "80.00" in text
    assert "4111" not in message_text(PROPOSAL)


@pytest.mark.parametrize(
    "url", ["http://hooks.slack.test/services/x", "file:///etc/passwd", "ftp://x", "hooks.slack.test"]
)
def test_given_a_non_https_webhook_url_when_sending_then_it_is_refused_and_nothing_is_posted(
    url: str,
) -> None:
    posts = Posts()
    with pytest.raises(ConfigError, match="https"):
        WebhookChannel("slack", lambda: url, posts).send(ALICE, PROPOSAL, LINK)
    assert posts.sent == []
    # and post_json refuses it too, before opening anything
    with pytest.raises(ConfigError, match="https"):
        post_json(url, b"{}")


def test_an_unknown_webhook_kind_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        WebhookChannel("teams", lambda: SLACK_URL, Posts())


def test_post_json_posts_json_with_a_timeout_and_follows_no_redirects(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: dict[str, Any] = {}

    class Response:
        status = 204

        def __enter__(self) -> Response:
            return self

        def __exit__(self, *exc: object) -> None:
            return None

        def read(self, limit: int = -1) -> bytes:
            return b""

    class Opener:
        def open(self, request: Any, timeout: float) -> Response:
            seen.update(request=request, timeout=timeout)
            return Response()

    def build_opener(*handlers: Any) -> Opener:
        seen["handlers"] = handlers
        return Opener()

    monkeypatch.setattr(urllib.request, "build_opener", build_opener)
    # When a notification is posted
    post_json(DISCORD_URL, b'{"content": "x"}')
    # Then it is a JSON POST to exactly that URL, with a short timeout and redirects refused
    request = seen["request"]
    assert (request.full_url, request.get_method(), request.data) == (
        DISCORD_URL,
        "POST",
        b'{"content": "x"}',
    )
    assert request.get_header("Content-type") == "application/json"
    assert 0 < seen["timeout"] <= 10
    assert seen["handlers"] == (notify._NoRedirects,)  # noqa: SLF001


def test_given_a_failing_channel_when_notifying_then_notify_raises_and_the_proposal_stays_stored(
    aws: Aws,
) -> None:
    # Given a stored proposal and two channels, one of them down
    store = ProposalStore(aws.client("dynamodb"), aws.names["ApprovalsTable"])
    store.propose(PROPOSAL)
    down, printed = Posts(fail=True), PrintChannel(lambda line: None)
    metrics = CountingMetrics()
    notifier = Notifier(
        lambda p: {"alice": LINK},
        lambda tool: (ALICE,),
        [WebhookChannel("slack", lambda: SLACK_URL, down), printed],
        LOG,
        metrics,
    )
    # When the notifier runs for it
    with pytest.raises(NotificationFailed):
        notifier.notify(PROPOSAL)
    # Then the stream record is retried (the raise), the other channel still delivered,
    # and the proposal is still there to be notified again or listed by the CLI
    assert [m["approval_id"] for m in printed.outbox] == ["ap_1"]
    assert metrics.totals["ApprovalNotifyFailed"] == 1
    assert store.get("ap_1") == PROPOSAL


def test_given_webhook_refs_in_the_environment_when_the_notifier_starts_then_a_new_proposal_reaches_both(
    aws: Aws, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a deployment configured for Slack and Discord, the URLs behind secret references
    from lockgate.runtime import approvals as approvals_runtime

    posts = Posts()
    monkeypatch.setattr(approvals_runtime, "post_json", posts)  # where the runtime builds the channels
    for name, value in {
        "APPROVALS_TABLE": aws.names["ApprovalsTable"],
        "APPROVAL_LINK_SECRET_ARN": "env:TEST_LINK_SECRET",
        "TEST_LINK_SECRET": "link-secret-for-tests-0123456789abcdef",
        "APPROVAL_BASE_URL": "https://example.test/approvals",
        "APPROVAL_CHANNELS": "slack, discord",
        "APPROVAL_SLACK_WEBHOOK_REF": "env:TEST_SLACK_URL",
        "APPROVAL_DISCORD_WEBHOOK_REF": "env:TEST_DISCORD_URL",
        "TEST_SLACK_URL": SLACK_URL,
        "TEST_DISCORD_URL": DISCORD_URL,
        "LOCKGATE_CONFIG": str(ROOT / "lockgate.toml"),
    }.items():
        monkeypatch.setenv(name, value)
    app = load_approval_app()
    # When the stream delivers a new refund proposal
    record = {"eventName": "INSERT", "dynamodb": {"NewImage": PROPOSAL.to_item(), "SequenceNumber": "1"}}
    assert app.notify_batch({"Records": [record]}) == {"batchItemFailures": []}
    # Then each shared channel got one announcement, and no signed link reached either
    assert sorted(url for url, _ in posts.sent) == sorted([SLACK_URL, DISCORD_URL])
    assert not any("/ap_1?" in json.dumps(payload) for _, payload in posts.sent)


def test_given_slack_without_a_webhook_ref_when_the_notifier_starts_then_it_refuses(
    aws: Aws, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in {
        "APPROVALS_TABLE": aws.names["ApprovalsTable"],
        "APPROVAL_LINK_SECRET_ARN": "env:TEST_LINK_SECRET",
        "APPROVAL_CHANNELS": "slack",
        "LOCKGATE_CONFIG": str(ROOT / "lockgate.toml"),
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("APPROVAL_SLACK_WEBHOOK_REF", raising=False)
    with pytest.raises(ConfigError, match="APPROVAL_SLACK_WEBHOOK_REF"):
        load_approval_app()


def load_approval_app() -> Any:
    """The approval handler module, imported fresh under the current environment."""
    path = ROOT / "functions" / "approval_callback" / "app.py"
    spec = importlib.util.spec_from_file_location("approval_callback_app_for_notify", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
