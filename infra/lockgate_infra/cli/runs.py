"""`lockgate runs list|show`: agent runs from the State table, with what became of their actions."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import time
from collections.abc import Callable
from typing import Any

from lockgate_infra.cli.run_actions import as_json, utc
from lockgate_infra.cli.targets import Target

MAX_PAGES = 200  # Scan pages (1 MB each) one `runs list` reads at most; it says so when it stops early
SINCE_HELP = "a UTC date (2026-11-30) or an age (24h, 7d, 90m); default 7d"
AGE = re.compile(r"^(\d+)([mhd])$")
UNIT_SECONDS = {"m": 60, "h": 3_600, "d": 86_400}


def add_runs_parser(
    commands: Any, run_list: Callable[..., int], run_show: Callable[..., int], run_trace: Callable[..., int]
) -> list[Any]:
    """``lockgate runs list``, ``show`` and ``trace``; returns the three (they take a target)."""
    runs = commands.add_parser("runs", help="agent runs")
    runs_commands = runs.add_subparsers(dest="runs_command", required=True)
    listing = runs_commands.add_parser(
        "list",
        help="runs newest first: id, task, status, outcome, start time (UTC), cost",
        description="Runs newest first. There is no index by time: this reads the State table with a "
        f"filtered Scan, at most {MAX_PAGES} pages, and says so when it stopped early.",
    )
    listing.add_argument("--task", help="only this task's runs")
    listing.add_argument("--status", help="only runs in this status (completed, needs_person, running, ...)")
    listing.add_argument("--since", type=since_seconds, default="7d", metavar="WHEN", help=SINCE_HELP)
    listing.add_argument("--limit", type=int, default=50, help="show at most this many (default 50)")
    listing.set_defaults(run=run_list)
    show = runs_commands.add_parser(
        "show",
        help="a run's transcript, tool decisions, tokens and cost, and the final outcome of each "
        "action a person was asked about",
    )
    show.add_argument("id", help="the run id: the delivery id it ran for, e.g. helpdesk#msg_123")
    show.add_argument("--json", action="store_true", help="the raw run record and its actions' outcomes")
    show.add_argument(
        "--wait",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="wait up to this long for the run to exist and finish (a delivery just sent)",
    )
    show.set_defaults(run=run_show)
    trace = runs_commands.add_parser(
        "trace",
        help="a delivery's trace as a waterfall: every hop from the webhook to what ran, with its model "
        "and tool calls and who approved (the local stack's spans)",
    )
    trace.add_argument("id", help="the delivery id, e.g. helpdesk#msg_123")
    trace.add_argument("--spans", metavar="FILE", help="a spans file (default: .lockgate/spans.jsonl)")
    trace.add_argument("--json", action="store_true", help="the spans as JSON, in start order")
    trace.set_defaults(run=run_trace)
    return [listing, show, trace]


def since_seconds(text: str, now: float | None = None) -> int:
    """``--since``: a UTC date or an age, as epoch seconds."""
    now = time.time() if now is None else now
    age = AGE.match(text.strip())
    if age:
        return int(now) - int(age.group(1)) * UNIT_SECONDS[age.group(2)]
    try:
        day = dt.date.fromisoformat(text.strip())
    except ValueError:
        wanted = "a date (2026-11-30) or an age (24h)"
        raise argparse.ArgumentTypeError(f"{text!r} is not {wanted}") from None
    return int(dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC).timestamp())


def runs_list(args: argparse.Namespace, target: Target) -> int:
    """Print matching runs, newest first."""
    from lockgate.agent.runs import Run, page_of_runs

    db, table = target.client("dynamodb"), target.name("StateTable")
    found: list[Run] = []
    start: dict[str, Any] | None = None
    pages = 0
    while pages < MAX_PAGES:
        page, start = page_of_runs(db, table, args.since, start)
        pages += 1
        found.extend(r for r in page if args.task in (None, r.task) and args.status in (None, r.status))
        if start is None:
            break
    found.sort(key=lambda r: r.created_at, reverse=True)
    for run in found[: args.limit]:
        cost = float(run.totals.get("cost_usd", 0) or 0)
        outcome = " ".join(run.outcome.split())[:80]
        print(f"{run.run_id}  {run.task}  {run.status}  {utc(run.created_at)}  ${cost:.4f}  {outcome}")
    shown = min(len(found), args.limit)
    print(f"{shown} of {len(found)} run(s) since {utc(args.since)}")
    if start is not None:
        print(f"(stopped after {MAX_PAGES} pages of the State table: narrow --since to see all)")
    return 0


def runs_show(args: argparse.Namespace, target: Target) -> int:
    """Print one run: its transcript and the final outcome of each action a person was asked about."""
    from lockgate.actions.ledger import Ledger
    from lockgate.agent.runs import RunStore
    from lockgate.approvals.decisions import DecisionStore
    from lockgate.approvals.proposals import ProposalStore
    from lockgate.clock import SystemClock
    from lockgate.errors import LockgateError
    from lockgate.inbox.store import InboxStore
    from lockgate_infra.cli.run_actions import RunActions
    from lockgate_infra.cli.transcript import render

    db, clock = target.client("dynamodb"), SystemClock()
    runs = RunStore(db, target.name("StateTable"), clock)
    run = runs.get(args.id)
    deadline = time.monotonic() + args.wait
    while (run is None or run.status == "running") and time.monotonic() < deadline:
        time.sleep(0.5)
        run = runs.get(args.id)
    if run is None:
        raise LockgateError(f"no run {args.id!r} (`lockgate runs list` shows recent ones)")
    actions = RunActions(
        ProposalStore(db, target.name("ApprovalsTable")),
        DecisionStore(db, target.name("DecisionsTable")),
        Ledger(db, target.name("StateTable"), clock),
        InboxStore(db, target.name("InboxTable")),
    ).of(run, clock.now())
    if not args.json:
        print(render(run, actions))
        return 0
    record = {
        "run_id": run.run_id,
        "task": run.task,
        "status": run.status,
        "outcome": run.outcome,
        "created_at": run.created_at,
        "totals": run.totals,
        "steps": [{"n": s.n, "kind": s.kind, "data": s.data} for s in run.steps],
        "actions": [as_json(a) for a in actions.values()],
    }
    print(json.dumps(record, indent=2, default=str))
    return 0
