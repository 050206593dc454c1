"""Editing in Slack, on moto with the Slack stand-in over loopback: the Edit button opens the edit modal
(``views.open`` with the bot token), and the modal's submission is an edit-and-approve decision through
the same recorder as the page and the CLI.

The callback and notifier are built as the handler builds them (``World``, from test_slack_messages),
on a fixed clock. What is asserted is what happened: the modal the stand-in was asked to open, the
Decisions rows (versions, decisions, refusals), the answer Slack would show in the modal, the message
as the channel shows it after the notifier read the Decisions stream.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from lockgate.approvals.decisions import Choice, DecisionOutcome
from lockgate.approvals.proposals import Proposal
from lockgate.approvals.refusals import Why
from lockgate.approvals.slack import CANNOT_DECIDE, NOT_OPENED
from lockgate.http import HttpResponse
from lockgate_infra.local.devsecrets import SLACK_DEV_SECRETS
from lockgate_infra.local.slack_modals import modal_fields, submission_payload
from lockgate_infra.local.slack_stub import LOCAL_TEAM, signed_click
from tests.integration.test_slack_messages import ALICE, BOB, CAROL, STRANGER, World, world
from tests.support import race

__all__ = ["world"]  # the fixture, shared with test_slack_messages

EXPIRED = "This request has expired: nobody decided in time, and it will not happen."


def edit_click(world: World, user: str, proposal: Proposal, **where: Any) -> tuple[int, list[str], list[Any]]:
    """Click Edit on the proposal's message as ``user``: the status, what the clicker was told, the
    modals the stand-in was asked to open since."""
    before = len(world.slack.channels.views)
    trigger = f"{len(world.slack.calls)}.{before}.test"  # Slack gives each click its own trigger
    status, answers = world.click(user, proposal, "lockgate_edit", trigger_id=trigger, **where)
    return status, [a.body["text"] for a in answers], world.slack.channels.views[before:]


def submit(
    world: World, opened: dict[str, Any], user: str, secret: str | None = None, **values: str
) -> HttpResponse:
    """Submit the modal ``opened`` as ``user`` of our workspace (``team`` among ``values``: another)."""
    team = values.pop("team", LOCAL_TEAM)
    payload = submission_payload(opened, user, values, team=team)
    body, headers = signed_click(
        payload, secret or SLACK_DEV_SECRETS["signing_secret"], int(world.clock.now())
    )
    slack = world.callback.slack
    assert slack is not None
    return slack.handle(body, {k.lower(): v for k, v in headers.items()})


def opened_by(world: World, user: str, proposal: Proposal) -> dict[str, Any]:
    """The modal a reviewer's Edit click opened."""
    status, told, (opened,) = edit_click(world, user, proposal)
    assert (status, told) == (200, [])
    return opened


def rows(world: World, proposal: Proposal) -> list[str]:
    """The sort keys of the proposal's Decisions rows (decisions, versions, #state, refusals)."""
    table = world.aws.names["DecisionsTable"]
    items = world.aws.client("dynamodb").scan(TableName=table, ConsistentRead=True)["Items"]
    return sorted(i["reviewer"]["S"] for i in items if i["approval_id"]["S"] == proposal.approval_id)


def modal_text(answer: HttpResponse) -> str:
    """The words an ``update`` answer puts in the modal."""
    body = json.loads(answer.body)
    assert body["response_action"] == "update" and "submit" not in body["view"]
    return str(body["view"]["blocks"][0]["text"]["text"])


def test_given_an_editable_proposal_then_its_message_offers_edit_and_a_fixed_one_does_not(
    world: World,
) -> None:
    editable, fixed = world.propose(1, editable=True), world.propose(2)
    labels = {
        p.approval_id: [
            (e["action_id"], e["text"]["text"])
            for b in world.message(p)["blocks"]
            if b["type"] == "actions"
            for e in b["elements"]
        ]
        for p in (editable, fixed)
    }
    assert labels[editable.approval_id] == [
        ("lockgate_approve", "Approve"),
        ("lockgate_edit", "Edit…"),
        ("lockgate_reject", "Reject"),
    ]
    assert labels[fixed.approval_id] == [("lockgate_approve", "Approve"), ("lockgate_reject", "Reject")]


def test_given_a_reviewer_clicks_edit_then_the_modal_opens_on_the_version_shown_and_nothing_is_decided(
    world: World,
) -> None:
    proposal = world.propose(editable=True)
    # When alice clicks Edit
    status, told, (opened,) = edit_click(world, ALICE, proposal)
    # Then Slack was asked, with the bot token and the click's trigger, to open the edit modal
    assert (status, told) == (200, [])  # no message to the clicker: the modal is the answer
    (call,) = world.slack.of_kind("views.open")
    assert call.authorized and call.body["trigger_id"] == opened["trigger_id"]
    view = opened["view"]
    assert view["callback_id"] == "lockgate_edit" and view["title"]["text"] == "Edit and approve"
    assert [(f.name, f.initial) for f in modal_fields(view)] == [("amount", "80.00")]
    assert json.loads(view["private_metadata"]) == {
        "approval_id": proposal.approval_id,
        "seen": proposal.fingerprint,
    }
    # And opening it decided nothing, and kept nothing
    assert rows(world, proposal) == []


def test_given_a_value_its_schema_refuses_then_it_is_shown_under_its_field_and_nothing_is_written(
    world: World,
) -> None:
    proposal = world.propose(editable=True)
    opened = opened_by(world, ALICE, proposal)
    for typed, said in (
        ("-5", "amount: more than 0"),
        ("forty", "amount: a plain number written out in digits 0-9, e.g. 80.00"),
    ):
        answer = submit(world, opened, ALICE, amount=typed)
        assert answer.status == 200
        assert json.loads(answer.body) == {"response_action": "errors", "errors": {"field:amount": said}}
    # An unchanged amount is no edit either: she is told to approve it as it is
    answer = submit(world, opened, ALICE, amount="80.00")
    assert json.loads(answer.body)["errors"] == {
        "field:amount": "the edit changes nothing: approve it as it is"
    }
    assert rows(world, proposal) == []


def test_given_a_smaller_amount_submitted_then_her_approval_of_the_edited_version_is_written_and_shown(
    world: World,
) -> None:
    proposal = world.propose(reviewers_required=2, editable=True)
    opened = opened_by(world, ALICE, proposal)
    # When she submits the modal with the amount changed to 40.00
    answer = submit(world, opened, ALICE, amount="40.00")
    # Then Slack closes the modal (an empty answer), and version 1 is hers with her approval of it
    assert (answer.status, answer.body) == (200, "")
    assert rows(world, proposal) == ["#state", "#v1", "alice#v1"]
    standing = world.decisions.standing(proposal.approval_id)
    (version,) = standing.versions
    assert (version.n, version.editor, version.changes) == (1, "alice", {"amount": ("80.00", "40.00")})
    (decision,) = standing.decisions
    assert (decision.reviewer, decision.verdict, decision.via, decision.version) == (
        "alice",
        Choice.APPROVE,
        "slack",
        1,
    )
    # And the message shows the edit and 1 of 2, with buttons for the edited version
    world.stream_decisions()
    message = world.message(proposal)
    assert message["text"].startswith("1 of 2 approvals (alice at 00:00 UTC)")
    # naming what will run (the tool's own summary of the edited version) and what was proposed
    assert message["text"].endswith(
        "wire transfer $40.00 on order A-2001; edited by alice: amount 80.00 → 40.00 "
        "(proposed: refund $80.00 USD on order A-2001))"
    )
    assert f"{proposal.approval_id}|{version.fingerprint}" in json.dumps(message["blocks"])
    # When bob approves the edited version from the message (as it shows now)
    world.click(BOB, Proposal(**{**proposal.__dict__, "fingerprint": version.fingerprint}))
    world.stream_decisions()
    assert world.message(proposal)["text"].startswith("Approved by alice and bob at 00:00 UTC — runs once")


@pytest.mark.parametrize(
    ("user", "team", "why"),
    [
        (STRANGER, LOCAL_TEAM, Why.NOT_A_REVIEWER),
        (CAROL, LOCAL_TEAM, Why.NO_ROLE),
        (ALICE, "T0OTHER", Why.OTHER_WORKSPACE),  # a reviewer's user id, from a workspace not ours
    ],
    ids=["not a reviewer", "no role", "another workspace"],
)
def test_given_someone_who_may_not_decide_then_edit_opens_nothing_a_submission_records_nothing_both_kept(
    world: World, user: str, team: str, why: Why
) -> None:
    proposal = world.propose(editable=True)
    # When they click Edit
    status, told, opened = edit_click(world, user, proposal, team=team)
    # Then no modal: only they are told, neutrally
    assert (status, told, opened) == (200, [CANNOT_DECIDE], [])
    assert world.slack.of_kind("views.open") == []
    # When they submit a modal anyway (alice's, replayed with their identity)
    answer = submit(world, opened_by(world, ALICE, proposal), user, amount="40.00", team=team)
    # Then the modal says they cannot, nothing is decided, and both refusals are kept
    assert modal_text(answer) == CANNOT_DECIDE
    assert [r.why for r in world.refused(proposal)] == [why, why]
    assert world.decisions.standing(proposal.approval_id).versions == []


def test_given_another_reviewer_edited_meanwhile_then_a_submission_from_the_older_form_records_nothing(
    world: World,
) -> None:
    proposal = world.propose(reviewers_required=2, editable=True)
    opened = opened_by(world, ALICE, proposal)
    # When bob edits it on his page (to 60.00) while alice's modal is open on version 0
    world.recorder.record(proposal, "bob", Choice.APPROVE, "link", edit={"amount": "60.00"})
    answer = submit(world, opened, ALICE, amount="40.00")
    # Then nothing of hers is written; she is told to look again; the refusal is kept as "edited"
    assert modal_text(answer).startswith("This request was edited since this form showed it; nothing was")
    assert [k for k in rows(world, proposal) if not k.startswith("refused#")] == ["#state", "#v1", "bob#v1"]
    assert [v.editor for v in world.decisions.standing(proposal.approval_id).versions] == ["bob"]
    assert [r.why for r in world.refused(proposal)] == [Why.EDITED]
    # And Edit on the message as it was (version 0) opens nothing either
    status, told, opened_again = edit_click(world, ALICE, proposal)
    assert opened_again == [] and told[0].startswith("This request was edited since this message showed it")


def test_given_an_expired_or_settled_request_then_edit_and_its_submission_are_refused_and_kept(
    world: World,
) -> None:
    late = world.propose(1, expires_in=3_600, editable=True)
    opened = opened_by(world, ALICE, late)
    world.clock.advance(7_200)
    # An open modal submitted after the deadline, and a new click on Edit, are both told it expired
    assert modal_text(submit(world, opened, ALICE, amount="40.00")) == EXPIRED
    assert edit_click(world, ALICE, late)[1:] == ([EXPIRED], [])
    assert [r.why for r in world.refused(late)] == [Why.EXPIRED, Why.EXPIRED]
    # A request approved by another reviewer while alice's modal was open: settled, nothing written
    settled = world.propose(2, editable=True)
    opened = opened_by(world, ALICE, settled)
    assert world.recorder.record(settled, "bob", Choice.APPROVE, "cli") is DecisionOutcome.APPROVED
    assert (
        modal_text(submit(world, opened, ALICE, amount="40.00"))
        == "This was already approved; nothing more is needed."
    )
    assert [r.why for r in world.refused(settled)] == [Why.SETTLED]
    assert world.decisions.standing(settled.approval_id).versions == []


def test_given_a_submission_slack_did_not_sign_then_nothing_is_written_at_all(world: World) -> None:
    proposal = world.propose(editable=True)
    opened = opened_by(world, ALICE, proposal)
    answer = submit(world, opened, ALICE, secret="not-the-signing-secret", amount="40.00")
    assert (answer.status, json.loads(answer.body)) == (401, {"error": "request refused"})
    assert rows(world, proposal) == []
    assert world.metrics.totals["SlackInteractionRefused"] == 1


def test_given_slack_fails_to_open_the_modal_then_the_clicker_is_told_to_try_again(world: World) -> None:
    proposal = world.propose(editable=True)
    world.slack.lose_answer("views.open")
    status, told, _ = edit_click(world, ALICE, proposal)
    assert (status, told) == (200, [NOT_OPENED])
    assert world.metrics.totals["SlackModalNotOpened"] == 1
    assert rows(world, proposal) == []


def test_a_slack_edit_racing_an_approval_from_a_link_has_exactly_one_outcome(world: World) -> None:
    for n in range(1, 4):  # whichever wins, the other is told, and exactly one outcome is kept
        race_edit_and_link(world, n)


def race_edit_and_link(world: World, n: int) -> None:
    # Given alice's edit modal open on a refund one reviewer may settle, and bob about to approve it
    proposal = world.propose(n, editable=True)
    opened = opened_by(world, ALICE, proposal)
    results: dict[str, Any] = {}
    # When her submission (amount 40.00) and his approval from his link's page land at once
    race(
        [
            lambda: results.__setitem__("slack", submit(world, opened, ALICE, amount="40.00")),
            lambda: results.__setitem__(
                "link", world.recorder.record(proposal, "bob", Choice.APPROVE, "link")
            ),
        ]
    )
    # Then one decision is written, one approval event queued, and the loser was told
    standing = world.decisions.standing(proposal.approval_id)
    (decision,) = standing.decisions
    inbox = world.aws.client("dynamodb").scan(TableName=world.aws.inbox_table, ConsistentRead=True)["Items"]
    assert [i["pk"]["S"] for i in inbox if proposal.approval_id in i["pk"]["S"]] == [
        f"approval#{proposal.approval_id}#approved"
    ]
    if decision.reviewer == "alice":  # her edit won: version 1 is approved
        assert results["slack"].body == "" and results["link"] is DecisionOutcome.ALREADY_APPROVED
        assert [v.editor for v in standing.versions] == ["alice"] and decision.version == 1
    else:  # bob's approval of the proposal as it was won: no version; her modal says so
        assert results["link"] is DecisionOutcome.APPROVED and not standing.versions
        assert modal_text(results["slack"]) == "This was already approved; nothing more is needed."


def test_the_stand_in_shows_the_edit_command_and_each_modal_it_opens_and_a_trigger_opens_one(
    world: World,
) -> None:
    from lockgate.approvals.notify import send_post
    from lockgate.approvals.slack_api import SlackApiError, SlackWebApi
    from lockgate.approvals.slack_messages import proposal_blocks
    from lockgate.approvals.slack_modal import edit_view
    from lockgate_infra.local.slack_stub import SlackStub

    proposal = world.store(editable=True)
    lines: list[str] = []
    with SlackStub(SLACK_DEV_SECRETS["bot_token"], sink=lines.append) as stub:
        api = SlackWebApi(lambda: SLACK_DEV_SECRETS["bot_token"], send_post, stub.api_url)
        # When a message with an Edit button is posted, and the edit modal is opened
        ts = api.post_message("C0APPROVALS", "Approval needed", proposal_blocks(proposal, []))
        api.open_view("7.8.test", edit_view(proposal, proposal.args, proposal.fingerprint))
        # Then a trigger opens one modal, once, as Slack's does
        with pytest.raises(SlackApiError, match="exchanged_trigger_id"):
            api.open_view("7.8.test", edit_view(proposal, proposal.args, proposal.fingerprint))
    value, ap = f"{proposal.approval_id}|{proposal.fingerprint}", proposal.approval_id
    # And the console shows how to edit from the command line, and the modal as it opened
    assert lines == [
        f"[slack] chat.postMessage to C0APPROVALS (message {ts}): Approval needed",
        f"[slack]   button 'Approve': action_id lockgate_approve, value {value}",
        f"[slack]   button 'Edit…': action_id lockgate_edit, value {value}",
        f"[slack]   button 'Reject': action_id lockgate_reject, value {value}",
        f"[slack]   click: lockgate local slack click lockgate_approve {ap} --user SLACK_USER_ID",
        f"[slack]   edit: lockgate local slack edit {ap} --set NAME=VALUE --user SLACK_USER_ID",
        "[slack] views.open (view V00000001): modal 'Edit and approve'",
        "[slack]   field 'amount': 80.00",
        "[slack] views.open refused (exchanged_trigger_id): ",
    ]
