"""``lockgate local slack messages|click|edit``: the running stack's Slack stand-in, from another terminal.

A click is what Slack sends when someone clicks a button: a ``block_actions`` payload for a button
of a message the stand-in holds (its action id and value, the message's ts and channel), from the
configured workspace (``[approvals.slack] team_id``, or ``--team``), with a response_url on the
stand-in, form-encoded and signed with the app's signing secret as the stack stores it; posted to
the stack's interactivity route. What the stack answered through the response_url is printed (the
message itself changes a moment later: the notifier updates it from the Decisions stream). Exit
codes: 0 the stack accepted the click (2xx); 1 it refused it; 2 the click could not be sent (no
stack, no Slack stand-in, no such button, a bad user or workspace id).

An edit clicks a message's Edit button the same way, then submits the modal the stack opened (the
stand-in keeps each ``views.open``) with the values given, as Slack's ``view_submission``, signed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from lockgate.approvals.slack_messages import EDIT_ACTION
from lockgate.config import SlackApprovals, load_config
from lockgate.config.slack import SLACK_TEAM, SLACK_USER
from lockgate.secrets import SecretResolver
from lockgate_infra.local.loopback import request
from lockgate_infra.local.slack_modals import modal_fields, submission_payload
from lockgate_infra.local.slack_stub import click_payload, signed_click
from lockgate_infra.local.slack_view import Button, buttons, message_lines

INTERACTIVITY_ROUTE = "POST /approvals/slack"  # the Slack app's Interactivity Request URL


class SlackClickError(ValueError):
    """A Slack command that cannot run: no Slack stand-in, no such button, or a bad user id."""


def slack_url(state: Mapping[str, Any]) -> str:
    """The running stack's Slack stand-in (SlackClickError when it runs none)."""
    for stand_in in (state.get("status") or {}).get("stand_ins", []):
        if stand_in.get("kind") == "slack":
            return str(stand_in["url"])
    raise SlackClickError(
        f"the local stack on port {state.get('port')} runs no Slack stand-in: add [approvals.slack] to "
        f"{state.get('config')} (see docs/approvals.md) and start `lockgate local` again"
    )


def messages(state: Mapping[str, Any], out: TextIO) -> int:
    """Print every message in the stand-in's channels as it stands, with its buttons."""
    found = _get(slack_url(state), "/messages")
    for message in found:
        for line in message_lines(message):
            print(line, file=out)
    if not found:
        print("[slack] no message yet", file=out)
    return 0


def click(  # noqa: PLR0913 - the command's arguments
    state: Mapping[str, Any],
    secretsmanager: Any,
    action_id: str,
    value: str,
    user: str,
    out: TextIO,
    team: str | None = None,
) -> int:
    """Click the button ``action_id`` whose value is ``value`` (or starts with it) as Slack user ``user``
    of workspace ``team`` (default: the configured one)."""
    url, slack = _checked(state, user, team)
    message, button = find_button(_get(url, "/messages"), action_id, value)
    status, _ = _click(state, secretsmanager, (url, slack), message, button, user, team, out)
    return 0 if 200 <= status < 300 else 1


def edit(  # noqa: PLR0913 - the command's arguments
    state: Mapping[str, Any],
    secretsmanager: Any,
    value: str,
    changes: Sequence[str],
    user: str,
    out: TextIO,
    team: str | None = None,
) -> int:
    """Click Edit on the message of ``value`` (an approval id, or the button's value) as ``user``, then
    submit the modal the stack opened with ``changes`` (``NAME=VALUE`` each), as Slack would."""
    values = dict(_change(c) for c in changes)
    url, slack = _checked(state, user, team)
    message, button = find_button(_get(url, "/messages"), EDIT_ACTION, value)
    trigger = f"{time.time_ns()}.cli.local"  # which modal is this click's, among the stand-in's
    status, workspace = _click(state, secretsmanager, (url, slack), message, button, user, team, out, trigger)
    opened = [v for v in _get(url, "/views") if v.get("trigger_id") == trigger]
    if not 200 <= status < 300 or not opened:
        return 0 if 200 <= status < 300 else 1  # refused, and answered (printed) instead of a modal
    fields = modal_fields(opened[-1]["view"])
    shown = ", ".join(f"{f.name}={f.initial}" for f in fields)
    print(f"opened (only the clicker sees it): modal {opened[-1]['view']['title']['text']!r} "
          f"(view {opened[-1]['id']}): {shown}", file=out)  # fmt: skip
    try:
        payload = submission_payload(opened[-1], user, values, team=workspace, enterprise=slack.enterprise_id)
    except KeyError as exc:
        names = ", ".join(f.name for f in fields)
        raise SlackClickError(
            f"the edit form has no field {exc.args[0]!r} (its fields: {names}); nothing was submitted"
        ) from None
    body, headers = signed_click(payload, _signing_secret(slack, secretsmanager))
    target = f"{state['gateway_url']}/approvals/slack"
    status, reply = request(target, body, headers)
    typed = ", ".join(f"{k}={v}" for k, v in values.items()) or "nothing changed"
    print(f"submitted {typed} as {user} of {workspace}: POST {target} -> {status}", file=out)
    print(submission_answer(status, reply), file=out)
    return 0 if 200 <= status < 300 else 1


def submission_answer(status: int, reply: str) -> str:
    """What the stack's answer to a submission does to the modal, in one line."""
    if not 200 <= status < 300:
        return f"refused: {' '.join(reply.split())[:200]}"
    if not reply.strip():
        return (
            "answered: the modal closed (recorded; the message changes once the notifier reads the decision)"
        )
    answer = json.loads(reply)
    if answer.get("response_action") == "errors":
        shown = "; ".join(f"{k.partition(':')[2] or k}: {v!r}" for k, v in answer.get("errors", {}).items())
        return f"answered, under the field {shown} (nothing was recorded)"
    blocks = (answer.get("view") or {}).get("blocks") or [{}]
    return f"answered in the modal: {(blocks[0].get('text') or {}).get('text', '')}"


def _change(text: str) -> tuple[str, str]:
    """``amount=40.00`` → (amount, 40.00)."""
    name, equals, value = text.partition("=")
    if not equals or not name:
        raise SlackClickError(f"--set {text!r} is not NAME=VALUE (e.g. --set amount=40.00)")
    return name, value


def _checked(state: Mapping[str, Any], user: str, team: str | None) -> tuple[str, SlackApprovals]:
    """The stand-in's URL and the stack's [approvals.slack]; SlackClickError for what cannot be sent."""
    url = slack_url(state)
    if not SLACK_USER.match(user):
        raise SlackClickError(
            f"--user {user!r} is not a Slack user id (like U0ALICE01): a reviewer's slack_user"
        )
    if team is not None and not SLACK_TEAM.match(team):
        raise SlackClickError(f"--team {team!r} is not a Slack workspace id (like T0123ABCD)")
    slack = _slack(state)
    if not any(route.get("routeKey") == INTERACTIVITY_ROUTE for route in state.get("routes", [])):
        raise SlackClickError(f"the local stack serves no {INTERACTIVITY_ROUTE} route for Slack's clicks")
    return url, slack


def _click(  # noqa: PLR0913 - one click's parts
    state: Mapping[str, Any],
    secretsmanager: Any,
    stand_in: tuple[str, SlackApprovals],
    message: Mapping[str, Any],
    button: Button,
    user: str,
    team: str | None,
    out: TextIO,
    trigger_id: str = "1.2.local",
) -> tuple[int, str]:
    """Send one signed click and print what the stack answered; its HTTP status and the workspace."""
    url, slack = stand_in
    payload = click_payload(
        user,
        button.action_id,
        button.value,
        f"{url}/actions/{message['ts']}/cli-{time.time_ns()}",
        message_ts=str(message["ts"]),
        channel=str(message.get("channel", "")),
        team=team or slack.team_id,
        enterprise=slack.enterprise_id,
        trigger_id=trigger_id,
    )
    body, headers = signed_click(payload, _signing_secret(slack, secretsmanager))
    target = f"{state['gateway_url']}/approvals/slack"
    status, reply = request(target, body, headers)
    print(f"clicked {button.text!r} ({button.action_id}) on message {message['ts']} as {user} of "
          f"{payload['team']['id']}: POST {target} -> {status}", file=out)  # fmt: skip
    answers = [c for c in _get(url, "/calls") if c["path"] == payload["response_url"].removeprefix(url)]
    for answer in answers:
        seen_by = (
            "replaces the message" if answer["body"].get("replace_original") else "only the clicker sees it"
        )
        print(f"answered ({seen_by}): {answer['body'].get('text', '')}", file=out)
    if not answers and not 200 <= status < 300:
        print(f"refused: {' '.join(reply.split())[:200]}", file=out)
    return status, str(payload["team"]["id"])


def find_button(
    found: Sequence[Mapping[str, Any]], action_id: str, value: str
) -> tuple[Mapping[str, Any], Button]:
    """The one message and button with ``action_id`` whose value is ``value`` or starts with it."""
    matches = [
        (message, button)
        for message in found
        for button in buttons(message.get("blocks"))
        if button.action_id == action_id and button.value.startswith(value)
    ]
    exact = [(m, b) for m, b in matches if b.value == value]
    if len(exact) == 1 or len(matches) == 1:
        return (exact or matches)[0]
    if not matches:
        raise SlackClickError(
            f"no message in the Slack stand-in has a button {action_id} whose value starts with {value!r}; "
            "`lockgate local slack messages` lists them"
        )
    raise SlackClickError(
        f"{value!r} starts the value of {len(matches)} {action_id} buttons: give more of it"
    )


def _slack(state: Mapping[str, Any]) -> SlackApprovals:
    """The stack's [approvals.slack]: its workspace, and how to sign a click."""
    slack = load_config(state["config"]).approvals.slack
    if slack is None:
        raise SlackClickError(f"{state['config']} has no [approvals.slack]: nothing to sign a click with")
    return slack


def _signing_secret(slack: SlackApprovals, secretsmanager: Any) -> str:
    """The signing secret as the stack stores it ([approvals.slack] signing_secret)."""
    return SecretResolver({}, secretsmanager=lambda: secretsmanager).resolve(slack.signing_secret)


def _get(url: str, path: str) -> list[dict[str, Any]]:
    status, text = request(f"{url}{path}")
    if status != 200:
        raise SlackClickError(f"the Slack stand-in at {url} answered {status} to GET {path}")
    found: list[dict[str, Any]] = json.loads(text)
    return found
