"""Edit and approve in Slack, end to end on the embedded stack with the Slack stand-in on loopback.

grace's signed helpdesk email asks for a refund of A-2001 ($80.00); the agent proposes it; the
notifier posts its message with Approve, Edit… and Reject. A click on Edit is the signed interaction
request Slack sends; the callback asks the stand-in to open the edit modal (``views.open``), and the
modal's submission (``view_submission``, signed) is alice's approval of the edited version. The
Decisions rows, the refund the worker ran, and the message the notifier updated are what is asserted.
"""

from __future__ import annotations

import json
import time
from decimal import Decimal
from typing import Any

import pytest

from lockgate.approvals.refusals import Why
from lockgate_infra.local.approval_walk import pending_proposals
from lockgate_infra.local.devsecrets import SLACK_DEV_SECRETS
from lockgate_infra.local.loopback import request
from lockgate_infra.local.slack_modals import modal_fields, submission_payload
from lockgate_infra.local.slack_stub import LOCAL_TEAM, click_payload, signed_click
from lockgate_infra.local.stack import LocalStack
from tests.integration.test_slack_approvals import (
    ALICE,
    Stack,
    _button,
    _has_buttons,
    _posted,
    _refunds,
    _refusals,
    _shown,
    slack_local,
    slack_stack,
)
from tests.support import run_cli

__all__ = ["slack_local", "slack_stack"]  # the fixtures, shared with test_slack_approvals


def _open_edit(stack: Stack, user: str) -> dict[str, Any]:
    """Click Edit on the posted message as ``user``; the modal the stand-in was asked to open."""
    _, slack, gateway = stack
    trigger = f"{time.monotonic_ns()}.test"
    value = _button(_posted(slack), "lockgate_edit")
    payload = click_payload(user, "lockgate_edit", value, slack.response_url(trigger), trigger_id=trigger)
    status, _ = request(
        f"{gateway}/approvals/slack", *signed_click(payload, SLACK_DEV_SECRETS["signing_secret"])
    )
    assert status == 200
    (opened,) = [v for v in slack.channels.views if v["trigger_id"] == trigger]
    return opened


def _submit(stack: Stack, opened: dict[str, Any], user: str, secret: str | None = None, **values: str) -> Any:
    """Submit the modal as Slack does; the HTTP status and the answer's JSON (None: empty, it closes)."""
    _, _, gateway = stack
    payload = submission_payload(opened, user, values, team=LOCAL_TEAM)
    body, headers = signed_click(payload, secret or SLACK_DEV_SECRETS["signing_secret"])
    status, reply = request(f"{gateway}/approvals/slack", body, headers)
    return status, json.loads(reply) if reply.strip() else None


def _rows(stack: LocalStack) -> list[str]:
    items = stack.client("dynamodb").scan(TableName=stack.resources["DecisionsTable"])["Items"]
    return sorted(i["reviewer"]["S"] for i in items)


def test_a_reviewer_edits_the_refund_in_slack_and_exactly_the_edited_refund_runs_once(
    slack_stack: Stack,
) -> None:
    stack, slack, _ = slack_stack
    (proposal,) = pending_proposals(stack)
    # Given the message offers Edit, with the version it shows
    assert _button(_posted(slack), "lockgate_edit") == f"{proposal.approval_id}|{proposal.fingerprint}"
    # When alice clicks Edit
    opened = _open_edit(slack_stack, ALICE)
    # Then the stand-in was asked, with the bot token, to open the modal: the amount, prefilled
    (call,) = slack.of_kind("views.open")
    assert call.authorized and call.body["view"]["title"]["text"] == "Edit and approve"
    assert [(f.name, f.initial) for f in modal_fields(opened["view"])] == [("amount", "80.00")]
    assert _rows(stack) == []  # opening it decided nothing
    # When a forged submission arrives (not signed with the app's secret): 401, nothing written at all
    assert _submit(slack_stack, opened, ALICE, secret="forged", amount="1.00") == (
        401,
        {"error": "request refused"},
    )
    # When she submits a value the field refuses: it is shown under the field; nothing is written
    assert _submit(slack_stack, opened, ALICE, amount="-5") == (
        200,
        {"response_action": "errors", "errors": {"field:amount": "amount: more than 0"}},
    )
    assert _rows(stack) == []
    # When she submits 40.00
    assert _submit(slack_stack, opened, ALICE, amount="40.00") == (200, None)  # the modal closes
    # Then version 1 is hers, with her approval of it, from Slack
    items = stack.client("dynamodb").scan(TableName=stack.resources["DecisionsTable"])["Items"]
    stored = {i["reviewer"]["S"]: i for i in items}
    assert sorted(stored) == ["#state", "#v1", "alice#v1"]
    assert json.loads(stored["#v1"]["changes"]["S"]) == {"amount": ["80.00", "40.00"]}
    mine = stored["alice#v1"]
    assert (mine["verdict"]["S"], mine["via"]["S"], mine["version"]["N"]) == ("approve", "slack", "1")
    # And the refund that ran is the edited one, $40.00, once
    assert stack.drain(timeout=30)
    (refund,) = _refunds(stack)
    assert refund["order_id"]["S"] == "A-2001" and Decimal(refund["amount"]["N"]) == Decimal("40.00")
    # And the one message says what was approved, edited, without buttons
    message = _shown(slack)
    assert (
        message["text"].startswith("Approved by alice at ")
        and "edited by alice: amount 80.00 → 40.00" in (message["text"])
    )
    assert not _has_buttons(message) and len(slack.of_kind("chat.postMessage")) == 1
    # When the same submission comes again (a replay): nothing more is written or run; it is kept
    status, again = _submit(slack_stack, opened, ALICE, amount="40.00")
    assert status == 200 and again["view"]["blocks"][0]["text"]["text"] == (
        "This was already approved; nothing more is needed."
    )
    assert stack.drain(timeout=30)
    assert len(_refunds(stack)) == 1
    assert _refusals(stack) == [(f"{LOCAL_TEAM}/{ALICE}", Why.REPLAY.value)]


def test_an_edit_from_the_command_line_clicks_edit_and_submits_the_modal_as_slack_does(
    slack_local: LocalStack, capsys: pytest.CaptureFixture[str]
) -> None:
    stack = slack_local
    (proposal,) = pending_proposals(stack)
    edit = ("local", "slack", "edit", proposal.approval_id, "--user", ALICE)
    # A field the form does not have, or a change that is not NAME=VALUE: one line, exit 2, nothing decided
    assert run_cli(*edit, "--set", "amout=40.00")[0] == 2
    assert run_cli(*edit, "--set", "amount")[0] == 2
    assert capsys.readouterr().err.splitlines() == [
        "lockgate: the edit form has no field 'amout' (its fields: amount); nothing was submitted",
        "lockgate: --set 'amount' is not NAME=VALUE (e.g. --set amount=40.00)",
    ]
    # A value the field refuses: answered under the field, exit 0 (the stack answered), nothing decided
    code, out = run_cli(*edit, "--set", "amount=-5")
    assert code == 0 and out.splitlines()[-1] == (
        "answered, under the field amount: 'amount: more than 0' (nothing was recorded)"
    )
    assert _rows(stack) == []
    # When alice changes the amount to 40.00
    code, out = run_cli(*edit, "--set", "amount=40.00")
    # Then the Edit click opened the modal, its submission closed it, and the refund of $40.00 ran once
    assert code == 0, out
    clicked, opened, submitted, answered = out.splitlines()
    url = f"{stack.gateway.url}/approvals/slack"
    assert clicked.startswith("clicked 'Edit…' (lockgate_edit) on message ")
    assert clicked.endswith(f" as {ALICE} of {LOCAL_TEAM}: POST {url} -> 200")
    assert opened.startswith("opened (only the clicker sees it): modal 'Edit and approve' (view V")
    assert opened.endswith("): amount=80.00")
    assert submitted == f"submitted amount=40.00 as {ALICE} of {LOCAL_TEAM}: POST {url} -> 200"
    assert answered == (
        "answered: the modal closed (recorded; the message changes once the notifier reads the decision)"
    )
    assert stack.drain(timeout=30)
    (refund,) = _refunds(stack)
    assert Decimal(refund["amount"]["N"]) == Decimal("40.00")
    code, listed = run_cli("local", "slack", "messages")
    assert "Approved by alice at " in listed and "edited by alice: amount 80.00 → 40.00" in listed
