"""Slack without gaps, on moto with the Slack stand-in over loopback: the approval callback and the
notifier as the handler builds them (``build_approvals``), each with its own settings, on a fixed
clock whose waits are recorded, not slept.

What is asserted is what happened: the Decisions rows (decisions and refusals), the notifier's row
in the State table, the calls the stand-in recorded (one ``chat.postMessage``, the ``chat.update``
that follows each decision) and the message as the channel shows it, the metrics and log lines.
Stream records are fed to the notifier as Lambda would hand them over: an Approvals INSERT with its
new image, a Decisions INSERT with its keys only.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterator
from typing import Any

import pytest

from lockgate.actions.tools import fingerprint
from lockgate.approvals.decisions import Choice, DecisionRecorder, DecisionStore
from lockgate.approvals.proposals import Proposal, ProposalStore
from lockgate.approvals.refusals import Refusal, RefusalLog, Why
from lockgate.approvals.slack import CANNOT_DECIDE
from lockgate.approvals.slack_posts import CLAIM_GRACE_SECONDS
from lockgate.approvals.slack_records import SlackPostStore
from lockgate.clock import FixedClock
from lockgate.config import parse_config
from lockgate.inbox.queue import InboxQueue
from lockgate.inbox.store import InboxStore
from lockgate.runtime.approvals import build_approvals
from lockgate.runtime.deps import Deps
from lockgate.secrets import SecretResolver
from lockgate.settings import ApprovalSettings
from lockgate.telemetry import CountingMetrics
from lockgate_infra.local.devsecrets import SLACK_DEV_SECRETS
from lockgate_infra.local.slack_stub import LOCAL_TEAM, SlackCall, SlackStub, click_payload, signed_click
from tests.refund_worker import refund_worker
from tests.support import Aws, RecordingLog, Sleeper

CHANNEL = "C0APPROVALS"
ALICE, BOB, CAROL, STRANGER = "U0ALICE01", "U0BOB0001", "U0CAROL01", "U0STRANGER"
CONFIG = f"""
[approvals.slack]
channel = "{CHANNEL}"
bot_token = "env:SLACK_BOT"
signing_secret = "env:SLACK_SIGNING"
team_id = "{LOCAL_TEAM}"

[[approvals.reviewers]]
id = "alice"
roles = ["refunds"]
slack_user = "{ALICE}"

[[approvals.reviewers]]
id = "bob"
roles = ["refunds"]
slack_user = "{BOB}"

[[approvals.reviewers]]
id = "carol"
roles = ["support"]
slack_user = "{CAROL}"

[approvals.tools.refund_order]
roles = ["refunds"]

[approvals.tools.wire_transfer]
roles = ["refunds"]
reviewers_required = 2
"""
ARGS = {"order_id": "A-2001", "amount": "80.00"}
# Words a refusal must never tell a stranger: how Lockgate is set up, or which role would do.
CONFIGURATION_WORDS = ("slack_user", "lockgate.toml", "refunds", "role", "reviewer", "workspace", "admin")


class World:
    """The callback and the notifier on one moto account and one Slack stand-in."""

    def __init__(self, aws: Aws, slack: SlackStub, clock: FixedClock, config: str = CONFIG) -> None:
        self.aws, self.slack, self.clock = aws, slack, clock
        self.sleeper = Sleeper(clock)
        self.metrics = CountingMetrics()
        self.log = RecordingLog()
        self.answers: list[dict[str, Any]] = []  # the notifier's answer to each stream record
        self.config = parse_config({"sources": {}, **tomllib.loads(config)})
        clients: dict[str, Any] = {}
        deps = Deps(
            client=lambda service: clients.setdefault(service, aws.client(service)),
            secrets=SecretResolver(
                {
                    "SLACK_BOT": SLACK_DEV_SECRETS["bot_token"],
                    "SLACK_SIGNING": SLACK_DEV_SECRETS["signing_secret"],
                    "LINK_KEY": "link-key-for-tests-0123456789abcdef",
                }
            ),
            clock=clock,
            log=self.log,
            metrics=self.metrics,
            sleep=self.sleeper,
        )
        names, db = aws.names, aws.client("dynamodb")
        shared = {
            "config_path": "-",
            "approvals_table": names["ApprovalsTable"],
            "base_url": "/approvals",
            "link_secret_ref": "env:LINK_KEY",
            "channels": (),
            "from_address": "x@example.com",
        }
        self.callback = build_approvals(
            ApprovalSettings(
                **shared,
                decisions_table=names["DecisionsTable"],
                inbox_table=aws.inbox_table,
                inbox_queue_url=aws.queue_url,
                slack_api_url=slack.api_url,  # views.open: the Edit button's modal
                slack_response_prefix=slack.response_prefix,
            ),
            self.config,
            deps,
            # The worker's answer about an edit (deployed, over Lambda's Invoke)
            refund_worker(
                "support-inbox",
                self.config.approvals,
                ProposalStore(aws.client("dynamodb"), names["ApprovalsTable"]),
            ),
        )
        self.notifier = build_approvals(
            ApprovalSettings(
                **shared,
                decisions_table=None,
                inbox_table=None,
                inbox_queue_url=None,
                slack_api_url=slack.api_url,
                slack_message_table=aws.state_table,
                decisions_read_table=names["DecisionsTable"],
            ),
            self.config,
            deps,
        )
        db = aws.client("dynamodb")
        self.proposals = ProposalStore(db, names["ApprovalsTable"])
        self.decisions = DecisionStore(db, names["DecisionsTable"])
        self.refusals = RefusalLog(db, names["DecisionsTable"], clock, self.log, CountingMetrics())
        self.posts = SlackPostStore(db, aws.state_table)
        self.recorder = DecisionRecorder(  # what a link's POST and `lockgate approvals approve` use
            decisions=self.decisions,
            config=self.config.approvals,
            inbox=InboxStore(db, aws.inbox_table),
            queue=InboxQueue(aws.client("sqs"), aws.queue_url),
            clock=clock,
            log=self.log,
            metrics=CountingMetrics(),
            checks=refund_worker("support-inbox", self.config.approvals, self.proposals),
        )
        self._streamed: set[tuple[str, str]] = set()
        self._sequence = 0

    # -- the streams -----------------------------------------------------------------------

    def store(
        self, n: int = 1, *, reviewers_required: int = 1, expires_in: int = 86_400, editable: bool = False
    ) -> Proposal:
        """A refund proposal in the Approvals table (its record not yet handed to the notifier); a
        two-person one is for ``wire_transfer``, which the config says needs two reviewers."""
        now = int(self.clock.now())
        args = {**ARGS, "order_id": f"A-{2000 + n}"}
        # An editable amount, as a tool with editable=("amount",) records it on its proposals
        extra = {"editable": {"amount": {"type": "number", "exclusiveMinimum": 0}}} if editable else {}
        tool = "wire_transfer" if reviewers_required > 1 else "refund_order"
        proposal = Proposal(
            f"ap_{n:024x}", "support-inbox", f"run-{n}", tool, args, fingerprint(args),
            f"refund $80.00 USD on order A-{2000 + n}", "The parcel never arrived.",
            ("refunds over $50.00 need a person",), now, now + expires_in, 3_600, reviewers_required,
            extra=extra,
        )  # fmt: skip
        self.proposals.propose(proposal)
        return proposal

    def propose(self, n: int = 1, **options: Any) -> Proposal:
        """Store a refund proposal and hand its Approvals record to the notifier."""
        proposal = self.store(n, **options)
        self.proposal_record(proposal)
        return proposal

    def claimed_earlier(self, proposal: Proposal, seconds_ago: int = 60) -> None:
        """An earlier attempt's claim, left without a ts."""
        claimed_at = int(self.clock.now()) - seconds_ago
        assert self.posts.claim(proposal.approval_id, CHANNEL, claimed_at, proposal.expires_at) is None

    def proposal_record(self, proposal: Proposal) -> dict[str, Any]:
        """The notifier's answer to one Approvals INSERT (again, as a retried record is)."""
        return self._feed(
            {"Keys": {"approval_id": {"S": proposal.approval_id}}, "NewImage": proposal.to_item()}
        )

    def stream_decisions(self) -> list[dict[str, Any]]:
        """Hand every Decisions row not yet streamed to the notifier (keys only, as the stream has them:
        decisions, edited versions, the ``#state`` row, refusals); the records it reported failed."""
        items = self.aws.client("dynamodb").scan(TableName=self.aws.names["DecisionsTable"])["Items"]
        failed = []
        for item in sorted(items, key=lambda i: (i["approval_id"]["S"], i["reviewer"]["S"])):
            keys = {"approval_id": item["approval_id"], "reviewer": item["reviewer"]}
            if (keys["approval_id"]["S"], keys["reviewer"]["S"]) not in self._streamed:
                self._streamed.add((keys["approval_id"]["S"], keys["reviewer"]["S"]))
                failed += self._feed({"Keys": keys})["batchItemFailures"]
        return failed

    def _feed(self, change: dict[str, Any]) -> dict[str, Any]:
        self._sequence += 1
        record = {"eventName": "INSERT", "dynamodb": {**change, "SequenceNumber": str(self._sequence)}}
        self.answers.append(self.notifier.stream.handle({"Records": [record]}))
        return self.answers[-1]

    # -- Slack -----------------------------------------------------------------------------

    def click(
        self, user: str, proposal: Proposal, action: str = "lockgate_approve", **where: Any
    ) -> tuple[int, list[SlackCall]]:
        """A signed click on the proposal's button; the status and what the clicker was answered."""
        name = f"click-{user}-{len(self.slack.calls)}"
        value = f"{proposal.approval_id}|{proposal.fingerprint}"
        payload = click_payload(user, action, value, self.slack.response_url(name), **where)
        body, headers = signed_click(payload, SLACK_DEV_SECRETS["signing_secret"], int(self.clock.now()))
        slack = self.callback.slack
        assert slack is not None
        answer = slack.handle(body, {k.lower(): v for k, v in headers.items()})
        return answer.status, [c for c in self.slack.of_kind("response") if c.path.endswith(name)]

    def message(self, proposal: Proposal) -> dict[str, Any]:
        """The proposal's one message as the channel shows it now."""
        (message,) = [
            m for m in self.slack.messages.values()
            if (m.get("metadata") or {}).get("event_payload", {}).get("approval_id") == proposal.approval_id
        ]  # fmt: skip
        return message

    def refused(self, proposal: Proposal | None) -> list[Refusal]:
        return self.refusals.for_approval(proposal.approval_id if proposal else None)


@pytest.fixture
def world(aws: Aws) -> Iterator[World]:
    clock = FixedClock()
    with SlackStub(SLACK_DEV_SECRETS["bot_token"], now=clock.now) as slack:
        yield World(aws, slack, clock)


def _buttons(message: dict[str, Any]) -> bool:
    return '"type": "actions"' in json.dumps(message["blocks"])


# ------------------------------------------------------------------ posting once


def test_given_a_new_proposal_then_one_message_with_buttons_its_id_in_metadata_and_no_link_text(
    world: World,
) -> None:
    proposal = world.propose()
    (posted,) = world.slack.of_kind("chat.postMessage")
    # Then the text (a phone's notification) says what the message offers: buttons, no link
    text = posted.body["text"]
    assert text == (
        "Approval needed (support-inbox): refund $80.00 USD on order A-2001. "
        "Approve or Reject in this message; nothing happens unless it is approved."
    )
    assert "link" not in text.lower()
    # And the message carries the proposal's id as metadata (how a lost answer is found again)
    assert posted.body["metadata"] == {
        "event_type": "lockgate_approval",
        "event_payload": {"approval_id": proposal.approval_id},
    }
    # And the notifier keeps where it is, to update it whoever decides
    post = world.posts.get(proposal.approval_id)
    assert post is not None and (post.channel, post.ts) == (CHANNEL, world.message(proposal)["ts"])


def test_given_a_retried_proposal_record_then_nothing_is_posted_again(world: World) -> None:
    proposal = world.propose()
    # When the stream hands the same record over again (a later record of its batch failed)
    assert world.proposal_record(proposal) == {"batchItemFailures": []}
    # Then still one message: the claim has its ts
    assert len(world.slack.of_kind("chat.postMessage")) == 1
    assert world.slack.of_kind("conversations.history") == []


def test_given_a_lost_answer_when_the_record_is_retried_then_one_message_and_its_ts_is_kept(
    world: World,
) -> None:
    world.slack.lose_answer("chat.postMessage")
    now = int(world.clock.now())
    first = world.propose()
    # The first attempt failed (reported for retry) and left a claim without a ts
    assert world.answers == [{"batchItemFailures": [{"itemIdentifier": "1"}]}]
    post = world.posts.get(first.approval_id)
    assert post is not None and post.ts == "" and post.claimed_at == now
    (message,) = world.slack.messages.values()  # Slack has it all the same
    # When the stream retries the record
    assert world.proposal_record(first) == {"batchItemFailures": []}
    # Then it waited until the earlier request must have ended, looked, and found the message
    assert world.sleeper.waits == [CLAIM_GRACE_SECONDS]
    assert len(world.slack.of_kind("conversations.history")) == 1
    assert len(world.slack.of_kind("chat.postMessage")) == 1
    post = world.posts.get(first.approval_id)
    assert post is not None and post.ts == message["ts"]
    assert {
        "msg": "slack message of an earlier attempt found",
        "approval": first.approval_id,
    } in world.log.at("warning")


def test_given_a_claim_whose_post_never_reached_slack_then_the_retry_posts_it_once(world: World) -> None:
    # Given an earlier attempt claimed the proposal and died before posting
    proposal = world.store()
    world.claimed_earlier(proposal)
    # When its record is retried (a minute later: past the grace, no wait)
    assert world.proposal_record(proposal) == {"batchItemFailures": []}
    # Then the history was searched, nothing found, and the message posted once
    assert world.sleeper.waits == []
    assert len(world.slack.of_kind("conversations.history")) == 1
    (posted,) = world.slack.of_kind("chat.postMessage")
    assert world.posts.get(proposal.approval_id).ts == world.message(proposal)["ts"]  # type: ignore[union-attr]
    assert posted.body["channel"] == CHANNEL


def test_given_history_too_long_to_read_through_then_nothing_is_posted_and_the_record_is_retried(
    world: World,
) -> None:
    # Given a busy channel: 600 other messages since the claim
    now = int(world.clock.now())
    for n in range(600):
        ts = f"{now}.{n:06d}"
        world.slack.messages[ts] = {"channel": CHANNEL, "ts": ts, "text": f"chatter {n}", "blocks": []}
    proposal = world.store()
    world.claimed_earlier(proposal)
    # When its record is retried
    answer = world.proposal_record(proposal)
    # Then it is reported for a retry, and no message of it was posted blindly
    assert answer["batchItemFailures"] == [{"itemIdentifier": str(world._sequence)}]
    assert len(world.slack.of_kind("conversations.history")) == 5
    assert world.slack.of_kind("chat.postMessage") == []
    assert {"msg": "stream record failed; it will be retried"} in world.log.at("exception")
    assert world.posts.get(proposal.approval_id).ts == ""  # type: ignore[union-attr]


# ------------------------------------------------------------------ updated whoever decides


def test_given_two_people_must_approve_then_the_first_approval_updates_the_message_text_to_1_of_2(
    world: World,
) -> None:
    proposal = world.propose(reviewers_required=2)
    # When alice approves from the command line (or a link's page: the same recorder)
    world.recorder.record(proposal, "alice", Choice.APPROVE, "cli")
    assert world.stream_decisions() == []
    # Then the one message is updated, not posted again, and its text says 1 of 2
    assert len(world.slack.of_kind("chat.postMessage")) == 1
    (update,) = world.slack.of_kind("chat.update")
    message = world.message(proposal)
    assert update.body["ts"] == message["ts"]
    assert message["text"] == (
        "1 of 2 approvals (alice at 00:00 UTC) — another reviewer must approve before it runs "
        "(support-inbox: refund $80.00 USD on order A-2001)"
    )
    assert "Approval needed" not in message["text"] and _buttons(message)  # still open for the second
    # When bob approves through his link
    world.clock.advance(120)
    world.recorder.record(proposal, "bob", Choice.APPROVE, "link")
    world.stream_decisions()
    # Then it shows both, and the buttons are gone
    message = world.message(proposal)
    assert message["text"] == (
        "Approved by alice and bob at 00:02 UTC — runs once "
        "(support-inbox: refund $80.00 USD on order A-2001)"
    )
    assert not _buttons(message)
    assert len(world.slack.of_kind("chat.postMessage")) == 1
    assert world.metrics.totals["SlackMessageUpdated"] == 2


def test_given_an_edit_on_the_page_then_the_message_shows_it_and_a_click_on_the_old_version_decides_nothing(
    world: World,
) -> None:
    proposal = world.propose(reviewers_required=2, editable=True)
    old_value = f"{proposal.approval_id}|{proposal.fingerprint}"
    # When bob edits the amount on his page and approves the edited version
    world.recorder.record(proposal, "bob", Choice.APPROVE, "link", edit={"amount": "40.00"})
    assert world.stream_decisions() == []
    # Then the one message says what changed, counts bob's approval of it, and its buttons are for it
    message = world.message(proposal)
    # (what will run is the tool's own summary of the edited version; what was proposed follows)
    assert message["text"] == (
        "1 of 2 approvals (bob at 00:00 UTC) — another reviewer must approve before it runs "
        "(support-inbox: wire transfer $40.00 on order A-2001; edited by bob: amount 80.00 → 40.00 "
        "(proposed: refund $80.00 USD on order A-2001))"
    )
    assert "Approval rule: 2 reviewers with the role refunds (rule: the tool's default)" in json.dumps(
        message["blocks"], ensure_ascii=False
    )
    assert "Edited by bob at 00:00 UTC (version 1): amount 80.00 → 40.00" in json.dumps(
        message["blocks"], ensure_ascii=False
    )
    edited = world.decisions.standing(proposal.approval_id).current(proposal)
    assert f"{proposal.approval_id}|{edited.fingerprint}" in json.dumps(message["blocks"])
    assert old_value not in json.dumps(message["blocks"])
    # When alice clicks Approve on the message as it was before the edit (her Slack had not refreshed)
    payload = click_payload(ALICE, "lockgate_approve", old_value, world.slack.response_url("stale"))
    body, headers = signed_click(payload, SLACK_DEV_SECRETS["signing_secret"], int(world.clock.now()))
    slack = world.callback.slack
    assert slack is not None
    slack.handle(body, {k.lower(): v for k, v in headers.items()})
    # Then nothing is recorded: she is told to look again, and the refusal is kept
    (answer,) = [c for c in world.slack.of_kind("response") if c.path.endswith("stale")]
    assert answer.body["text"].startswith("This request was edited since this message showed it")
    assert [d.reviewer for d in world.decisions.for_approval(proposal.approval_id)] == ["bob"]
    assert [r.why for r in world.refused(proposal)] == [Why.EDITED]
    # And a click on the message as it is now approves the edited version: it is approved
    world.click(ALICE, Proposal(**{**proposal.__dict__, "fingerprint": edited.fingerprint}))
    world.stream_decisions()
    assert world.message(proposal)["text"].startswith("Approved by alice and bob at 00:00 UTC — runs once ")


def test_given_a_rejection_from_the_command_line_then_the_message_says_who_rejected_it(world: World) -> None:
    proposal = world.propose()
    world.recorder.record(proposal, "bob", Choice.REJECT, "cli", reason="duplicate of A-1999")
    world.stream_decisions()
    message = world.message(proposal)
    assert message["text"].startswith("Rejected by bob at 00:00 UTC — it will not happen (support-inbox: ")
    assert "duplicate of A-1999" not in json.dumps(message)  # the reason stays on the page, not the channel
    assert not _buttons(message)


def test_given_a_refused_click_on_a_pending_request_then_the_message_is_not_touched(world: World) -> None:
    proposal = world.propose()
    world.click(STRANGER, proposal)
    # The refusal row comes through the stream too; it changes nothing the message shows
    assert world.stream_decisions() == []
    assert world.slack.of_kind("chat.update") == []


def test_given_a_click_on_an_expired_request_then_it_is_refused_kept_and_the_message_says_expired(
    world: World,
) -> None:
    proposal = world.propose(expires_in=3_600)
    # When alice clicks Approve two hours later
    world.clock.advance(7_200)
    status, (answer,) = world.click(ALICE, proposal)
    # Then she alone is told it expired, nothing is decided, and the refusal is kept and counted
    assert status == 200 and answer.body["response_type"] == "ephemeral"
    assert answer.body["text"] == "This request has expired: nobody decided in time, and it will not happen."
    assert world.decisions.for_approval(proposal.approval_id) == []
    (refusal,) = world.refused(proposal)
    assert (refusal.why, refusal.channel, refusal.who) == (Why.EXPIRED, "slack", f"{LOCAL_TEAM}/{ALICE}")
    assert world.metrics.totals["ApprovalClickRefused"] == 1
    # And the message catches up: it no longer offers buttons
    world.stream_decisions()
    message = world.message(proposal)
    assert message["text"].startswith("Expired — nobody decided in time; it will not happen (support-inbox: ")
    assert not _buttons(message)


def test_given_a_decision_while_the_message_was_being_posted_then_the_poster_shows_it(world: World) -> None:
    # Given the notifier claimed the proposal and has not kept the ts yet
    proposal = world.store()
    world.claimed_earlier(proposal)
    # When alice approves, and her row's record reaches the notifier first
    world.recorder.record(proposal, "alice", Choice.APPROVE, "link")
    world.stream_decisions()
    assert world.slack.calls == []  # nothing to update yet
    # Then the proposal's own record, retried, posts it already approved (its view is read then)
    world.proposal_record(proposal)
    (posted,) = world.slack.of_kind("chat.postMessage")
    assert posted.body["text"].startswith("Approved by alice at ")
    assert world.slack.of_kind("chat.update") == []


def test_given_the_message_was_deleted_in_slack_then_an_update_is_dropped_not_retried(world: World) -> None:
    proposal = world.propose()
    world.slack.messages.clear()  # someone deleted it
    world.recorder.record(proposal, "alice", Choice.APPROVE, "link")
    assert world.stream_decisions() == []
    assert world.metrics.totals["SlackMessageGone"] == 1
    assert {"msg": "slack message cannot be updated", "approval": proposal.approval_id,
            "error": "message_not_found"} in world.log.at("warning")  # fmt: skip


# ------------------------------------------------------------------ refused clicks: kept, counted, neutral


@pytest.mark.parametrize(
    ("user", "where", "why"),
    [
        (ALICE, {"team": "T0OTHER"}, Why.OTHER_WORKSPACE),  # a mapped user id, from another workspace
        (STRANGER, {}, Why.NOT_A_REVIEWER),
        (CAROL, {}, Why.NO_ROLE),
    ],
    ids=["other workspace", "not a reviewer", "no role"],
)
def test_given_a_click_that_may_not_decide_then_it_is_kept_counted_and_answered_neutrally(
    world: World, user: str, where: dict[str, str], why: Why
) -> None:
    proposal = world.propose()
    status, (answer,) = world.click(user, proposal, **where)
    # Then nothing is decided, and only the clicker is told, in words that reveal no configuration
    assert status == 200
    assert answer.body == {"response_type": "ephemeral", "replace_original": False, "text": CANNOT_DECIDE}
    assert not any(word in answer.body["text"] for word in CONFIGURATION_WORDS)
    assert world.decisions.for_approval(proposal.approval_id) == []
    assert world.aws.inbox_items() == []
    # And the refusal is a row (who, which request, why), a metric and a log line
    team = where.get("team", LOCAL_TEAM)
    (refusal,) = world.refused(proposal)
    assert refusal == Refusal(proposal.approval_id, "slack", f"{team}/{user}", why, int(world.clock.now()))
    assert world.metrics.totals["ApprovalClickRefused"] == 1
    assert {"msg": "approval click refused", "channel": "slack", "why": why.value,
            "approval": proposal.approval_id, "who": f"{team}/{user}"} in world.log.at("warning")  # fmt: skip


def test_given_a_row_of_a_refusal_then_it_is_no_decision_and_expires_with_the_decisions(world: World) -> None:
    proposal = world.propose()
    world.click(STRANGER, proposal)
    (item,) = world.aws.client("dynamodb").scan(TableName=world.aws.names["DecisionsTable"])["Items"]
    # Beside the request's decisions (one query reads all that was said about it), never one of them
    assert item["approval_id"]["S"] == proposal.approval_id
    assert item["reviewer"]["S"].startswith(f"refused#{int(world.clock.now())}#")
    assert len(item["reviewer"]["S"].rsplit("#", 1)[1]) == 8
    assert (item["kind"]["S"], item["channel"]["S"], item["why"]["S"]) == (
        "refusal",
        "slack",
        "not-a-reviewer",
    )
    assert "verdict" not in item
    assert int(item["ttl"]["N"]) == int(world.clock.now()) + 30 * 86_400
    # And where the proposal stands reads as before: no decision, no revision, still pending
    standing = world.decisions.standing(proposal.approval_id)
    assert (standing.decisions, standing.versions, standing.revision) == ([], [], 0)
    world.recorder.record(proposal, "alice", Choice.APPROVE, "link")
    assert [d.reviewer for d in world.decisions.for_approval(proposal.approval_id)] == ["alice"]


def test_given_an_enterprise_pinned_then_a_click_from_another_org_is_refused(aws: Aws) -> None:
    clock = FixedClock()
    pinned = CONFIG.replace(
        f'team_id = "{LOCAL_TEAM}"\n', f'team_id = "{LOCAL_TEAM}"\nenterprise_id = "E0PINNED"\n'
    )
    with SlackStub(SLACK_DEV_SECRETS["bot_token"], now=clock.now) as slack:
        world = World(aws, slack, clock, pinned)
        proposal = world.propose()
        world.click(ALICE, proposal, enterprise="E0OTHER")
        world.click(ALICE, proposal)  # no organisation at all
        assert [r.why for r in world.refused(proposal)] == [Why.OTHER_WORKSPACE] * 2
        # From the pinned organisation and workspace, she decides
        world.click(ALICE, proposal, enterprise="E0PINNED")
        assert [d.reviewer for d in world.decisions.for_approval(proposal.approval_id)] == ["alice"]


def test_given_a_second_click_by_the_same_reviewer_then_it_is_kept_as_a_replay(world: World) -> None:
    proposal = world.propose(reviewers_required=2)
    world.click(ALICE, proposal)
    world.clock.advance(1)
    status, (answer,) = world.click(ALICE, proposal)
    assert answer.body["text"] == "You have already decided this one; your first decision stands."
    world.click(BOB, proposal)  # settles it
    world.clock.advance(1)
    world.click(BOB, proposal)  # bob again, on what his click settled
    world.clock.advance(1)
    world.click(ALICE, proposal, action="lockgate_reject")  # alice, once more
    assert [(r.who, r.why) for r in world.refused(proposal)] == [
        (f"{LOCAL_TEAM}/{ALICE}", Why.REPLAY),
        (f"{LOCAL_TEAM}/{BOB}", Why.REPLAY),
        (f"{LOCAL_TEAM}/{ALICE}", Why.REPLAY),
    ]
    assert len(world.decisions.for_approval(proposal.approval_id)) == 2


def test_given_a_click_on_a_request_settled_by_others_then_it_is_kept_as_settled(world: World) -> None:
    proposal = world.propose()
    world.recorder.record(proposal, "alice", Choice.APPROVE, "cli")
    status, (answer,) = world.click(BOB, proposal, action="lockgate_reject")
    assert answer.body["text"] == "This was already approved; nothing more is needed."
    (refusal,) = world.refused(proposal)
    assert refusal.why is Why.SETTLED


def test_given_a_click_on_a_request_that_does_not_exist_or_changed_then_it_is_kept(world: World) -> None:
    proposal = world.propose()
    gone = Proposal(**{**proposal.__dict__, "approval_id": "ap_" + "f" * 24})
    changed = Proposal(**{**proposal.__dict__, "fingerprint": "0" * 64})
    assert world.click(ALICE, gone)[1][0].body["text"] == CANNOT_DECIDE
    assert world.click(ALICE, changed)[1][0].body["text"] == CANNOT_DECIDE
    assert [r.why for r in world.refused(gone)] == [Why.UNKNOWN_REQUEST]
    assert [r.why for r in world.refused(proposal)] == [Why.CHANGED]
    assert world.decisions.for_approval(proposal.approval_id) == []


def test_given_a_request_slack_did_not_sign_then_no_row_is_written_only_a_count(world: World) -> None:
    proposal = world.propose()
    payload = click_payload(ALICE, "lockgate_approve", f"{proposal.approval_id}|{proposal.fingerprint}",
                            world.slack.response_url("forged"))  # fmt: skip
    body, headers = signed_click(payload, "not-the-signing-secret", int(world.clock.now()))
    slack = world.callback.slack
    assert slack is not None
    assert slack.handle(body, {k.lower(): v for k, v in headers.items()}).status == 401
    # Unauthenticated: nothing can be attributed, so nothing is written (no one can fill the table)
    assert world.aws.client("dynamodb").scan(TableName=world.aws.names["DecisionsTable"])["Items"] == []
    assert world.metrics.totals.get("ApprovalClickRefused") is None
    assert world.metrics.totals["SlackInteractionRefused"] == 1


def test_given_a_signed_request_that_is_no_click_on_our_buttons_then_it_is_kept_without_an_id(
    world: World,
) -> None:
    payload = click_payload(ALICE, "somebody_elses_button", "x", world.slack.response_url("other"))
    body, headers = signed_click(payload, SLACK_DEV_SECRETS["signing_secret"], int(world.clock.now()))
    slack = world.callback.slack
    assert slack is not None
    assert slack.handle(body, {k.lower(): v for k, v in headers.items()}).status == 400
    (refusal,) = world.refused(None)
    assert (refusal.approval_id, refusal.who, refusal.why) == ("-", "-", Why.NOT_A_CLICK)
