"""``lockgate local status`` and ``lockgate local slack messages|click|edit``: a running stack's commands."""

from __future__ import annotations

import argparse
from collections.abc import Callable

Run = Callable[[argparse.Namespace], int]

_PORT_HELP = (
    "which `lockgate local`, when several run in this checkout: its gateway port "
    "(default: LOCKGATE_LOCAL_PORT)"
)


def add_local_commands(
    local: argparse.ArgumentParser, *, status: Run, slack_messages: Run, slack_click: Run, slack_edit: Run
) -> None:
    """Give ``lockgate local`` (which runs the stack when given no command) its commands."""
    commands = local.add_subparsers(
        dest="local_command", metavar="COMMAND", title="commands of a running stack"
    )
    shown = commands.add_parser(
        "status",
        help="each poller and stand-in of the running stack: alive or stalled, handled, last activity",
        description="Each SQS queue poller, DynamoDB stream poller and the scheduler, and each stand-in "
        "(the offline model's Messages API, Slack), of the running `lockgate local`: alive or stalled (and "
        "why), what it handled, its last activity, its port or URL. Exit 0 when all are alive, 1 when one "
        "is stalled or the stack stopped refreshing its status, 2 when no stack runs.",
    )
    shown.add_argument("--json", action="store_true", help="machine-readable output")
    _port(shown)
    shown.set_defaults(run=status)
    slack = commands.add_parser(
        "slack", help="the Slack stand-in of the running stack: its messages, a click, an edit"
    )
    _add_slack_commands(slack, slack_messages=slack_messages, slack_click=slack_click, slack_edit=slack_edit)


def _add_slack_commands(
    slack: argparse.ArgumentParser, *, slack_messages: Run, slack_click: Run, slack_edit: Run
) -> None:
    """``lockgate local slack messages|click|edit``."""
    slack_commands = slack.add_subparsers(dest="slack_command", metavar="COMMAND", required=True)
    listed = slack_commands.add_parser(
        "messages", help="every message the stand-in holds, as it stands, with its buttons (action id, value)"
    )
    _port(listed)
    listed.set_defaults(run=slack_messages)
    clicked = slack_commands.add_parser(
        "click",
        help="click a button of a message in the stand-in, as Slack sends a click: signed, to the stack",
        description="Send the interaction request Slack sends when USER clicks the button ACTION_ID (e.g. "
        "lockgate_approve) of a message the Slack stand-in holds, signed with the stack's signing secret, to "
        "its POST /approvals/slack route; print what the stack answered. Exit 0 when the stack accepted the "
        "click, 1 when it refused it, 2 when it could not be sent (no stack, no Slack stand-in, no such "
        "button, a bad user or workspace id). The message itself changes a moment later, as the notifier "
        "updates it (`lockgate local slack messages`).",
    )
    clicked.add_argument(
        "action_id", metavar="ACTION_ID", help="the button's action id, e.g. lockgate_approve"
    )
    clicked.add_argument(
        "value",
        metavar="VALUE",
        help="the button's value, or its start (e.g. the approval id) if only one matches",
    )
    _clicker(clicked)
    clicked.set_defaults(run=slack_click)
    edited = slack_commands.add_parser(
        "edit",
        help="click a message's Edit button in the stand-in, then submit the modal the stack opens",
        description="Click the Edit button of the message of APPROVAL_ID as USER (as `click` does), then "
        "submit the edit modal the stack opened (the stand-in keeps each views.open) with the fields "
        "--set changes, as Slack's view_submission, signed, to POST /approvals/slack; print how the modal "
        "was answered: closed (recorded), a refused value under its field, or why nothing was recorded. "
        "Exit 0 when the stack accepted the requests, 1 when it refused one, 2 when they could not be sent "
        "(as `click`, or a field the form does not have).",
    )
    edited.add_argument(
        "value",
        metavar="APPROVAL_ID",
        help="the approval id (or the Edit button's value, or its start, if only one matches)",
    )
    edited.add_argument(
        "--set",
        dest="changes",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a field of the edit form and its new value, e.g. amount=40.00 (repeat for more)",
    )
    _clicker(edited)
    edited.set_defaults(run=slack_edit)


def _clicker(parser: argparse.ArgumentParser) -> None:
    """Who clicks, from which workspace, on which stack."""
    parser.add_argument(
        "--user", required=True, metavar="SLACK_USER_ID", help="who clicks: a Slack user id, e.g. U0ALICE01"
    )
    parser.add_argument(
        "--team",
        metavar="SLACK_TEAM_ID",
        help="the workspace the click comes from (default: [approvals.slack] team_id); another is refused",
    )
    _port(parser)


def _port(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--local-port", type=int, metavar="PORT", help=_PORT_HELP)
