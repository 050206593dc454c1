"""`lockgate inbox status|show|retry|redrive|replay` and `lockgate runs ...`, against any target."""

from __future__ import annotations

import argparse
import getpass
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lockgate_infra.cli.runs import add_runs_parser, runs_list, runs_show
from lockgate_infra.cli.send_test import add_send_parser, add_send_test_parser, send_event, send_test
from lockgate_infra.cli.targets import Target
from lockgate_infra.cli.trace_view import run_trace
from lockgate_infra.inbox_ops import InboxOps

ROOT = Path(__file__).resolve().parents[3]  # the checkout: lockgate.toml

TargetOf = Callable[[argparse.Namespace], Target]
Command = Callable[[argparse.Namespace, Target], int]


def add_inbox_parsers(commands: Any, *, target: TargetOf) -> list[argparse.ArgumentParser]:
    """Register ``lockgate inbox ...`` and ``lockgate runs ...``; returns the parsers that take a target."""

    def on_target(command: Command) -> Callable[[argparse.Namespace], int]:
        return lambda args: command(args, target(args))

    inbox = commands.add_parser("inbox", help="inspect and operate the inbox")
    inbox_commands = inbox.add_subparsers(dest="inbox_command", required=True)
    status = inbox_commands.add_parser("status", help="counts, oldest waiting delivery, failures")
    status.add_argument("--json", action="store_true", help="machine-readable output")
    status.set_defaults(run=on_target(inbox_status))
    show = inbox_commands.add_parser("show", help="one delivery's record (body summarised)")
    show.add_argument("id", help="delivery id, e.g. github#72d3162e-cc78-11e3-81ab-4c9367dc0958")
    show.set_defaults(run=on_target(inbox_show))
    retry = inbox_commands.add_parser(
        "retry", help="send a failed delivery round again (fresh attempts) and remove its dead letters"
    )
    retry.add_argument("id")
    retry.set_defaults(run=on_target(inbox_retry))
    redrive = inbox_commands.add_parser(
        "redrive", help="send every failed delivery round again and empty the DLQ of their dead letters"
    )
    redrive.add_argument("--dry-run", action="store_true", help="count them, change nothing")
    redrive.set_defaults(run=on_target(inbox_redrive))
    replay = inbox_commands.add_parser(
        "replay",
        help="run a done delivery again on purpose, as a new inbox item ID#replayN "
        "(side effects still run once: the ledger keys them by business identity)",
    )
    replay.add_argument("id", help="a delivery whose status is done")
    replay.add_argument("--by", help="who asks, recorded on the replay (default: your user name)")
    replay.set_defaults(run=on_target(inbox_replay))
    send = add_send_test_parser(inbox_commands, on_target(lambda args, where: send_test(args, where, ROOT)))
    event = add_send_parser(inbox_commands, on_target(lambda args, where: send_event(args, where, ROOT)))
    runs = add_runs_parser(
        commands, on_target(runs_list), on_target(runs_show), lambda args: run_trace(args, ROOT)
    )
    return [status, show, retry, redrive, replay, send, event, *runs]


def ops(target: Target) -> InboxOps:
    """The inbox operations on a target's table and queues."""
    from lockgate.inbox.queue import InboxQueue
    from lockgate.inbox.store import InboxStore

    sqs = target.client("sqs")
    return InboxOps(
        InboxStore(target.client("dynamodb"), target.name("InboxTable")),
        InboxQueue(sqs, target.name("InboxQueue")),
        sqs,
        target.name("InboxDLQ"),
    )


def inbox_status(args: argparse.Namespace, target: Target) -> int:
    """Counts, the oldest waiting delivery, the DLQ depth, recent failures."""
    status = ops(target).status(int(time.time()))
    if args.json:
        print(json.dumps(status.as_dict(), indent=2))
        return 0
    print("  ".join(f"{name}: {n}" for name, n in status.counts.items()))
    oldest = status.oldest_waiting_seconds
    print(
        f"oldest waiting: {'none' if oldest is None else f'{oldest}s'}   dead letters: {status.dead_letters}"
    )
    for failed in status.failed:
        print(f"  FAILED {failed['id']}  attempts={failed['attempts']}  {failed['error']}")
    return 0


def inbox_show(args: argparse.Namespace, target: Target) -> int:
    """One delivery's record, body summarised."""
    print(json.dumps(ops(target).show(args.id), indent=2, default=str))
    return 0


def inbox_retry(args: argparse.Namespace, target: Target) -> int:
    """Re-queue one delivery and remove its dead letters."""
    delivery = ops(target).retry(args.id, int(time.time()))
    print(f"re-queued {delivery.pk} (attempts reset to {delivery.attempts}); its dead letters removed")
    return 0


def inbox_redrive(args: argparse.Namespace, target: Target) -> int:
    """Re-queue every failed delivery (or count them)."""
    keys = ops(target).redrive(int(time.time()), dry_run=args.dry_run)
    for pk in keys:
        print(f"  {pk}")
    print(f"{'would redrive' if args.dry_run else 'redrove'} {len(keys)}")
    return 0


def inbox_replay(args: argparse.Namespace, target: Target) -> int:
    """Store and queue a replay of a done delivery."""
    replay, queued = ops(target).replay(args.id, int(time.time()), args.by or _user())
    how = "queued" if queued else "stored (the inbox sweep will queue it: the queue was unavailable)"
    print(f"replaying {args.id} as {replay.pk}: {how}; its run is `lockgate runs show '{replay.pk}'`")
    return 0


def _user() -> str:
    try:
        return getpass.getuser()
    except (OSError, KeyError):  # no login name in some containers
        return "operator"
