"""`lockgate approvals`: list, show, approve, edit, reject and audit proposals from an operator's terminal.

Approve, edit (approve changed arguments) and reject record the caller (``--as`` or
LOCKGATE_REVIEWER, a reviewer allowed for the tool) through the link's ``DecisionRecorder``; a
person confirms by typing the id's end (``--yes`` skips).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from lockgate.approvals.checking import CheckVersion
from lockgate.approvals.decisions import (
    MAX_REASON_CHARS,
    SETTLED,
    Choice,
    DecisionOutcome,
    DecisionRecorder,
    DecisionStore,
    State,
    checked_reason,
)
from lockgate.approvals.proposals import ProposalStore
from lockgate.approvals.refusals import RefusalLog, Why, why_refused
from lockgate.approvals.review_queue import ProposalStatus, ReviewQueue
from lockgate.approvals.versions import EditRefused
from lockgate.clock import Clock, SystemClock
from lockgate.config import ApprovalsConfig, load_config
from lockgate.inbox.queue import InboxQueue
from lockgate.inbox.store import InboxStore
from lockgate.telemetry import CountingMetrics
from lockgate_infra.cli.approval_text import (
    DECISION_MESSAGES,
    Refused,
    as_dict,
    changes_from,
    clean,
    details,
    table,
)
from lockgate_infra.cli.approval_wait import WAIT_SECONDS, waited
from lockgate_infra.cli.audit import add_audit_parser, run_audit
from lockgate_infra.cli.targets import Target, worker_checks

REVIEWER_ENV = "LOCKGATE_REVIEWER"
CONFIRM_CHARS = 6
QUIET = logging.getLogger("lockgate.cli.refusals")  # the refusal is the one line Refused prints
QUIET.addHandler(logging.NullHandler())
QUIET.propagate = False


def add_approvals_parser(
    commands: Any, *, default_config: Path, run: Callable[[argparse.Namespace], int]
) -> list[argparse.ArgumentParser]:
    """The `approvals` subcommands; returns them so the caller adds --local/--stack."""
    approvals = commands.add_parser("approvals", help="proposals waiting for a person: list, show, decide")
    sub = approvals.add_subparsers(dest="approvals_command", required=True)
    listing = sub.add_parser("list", help="pending proposals (--all: every stored one)")
    listing.add_argument("--all", action="store_true", help="include approved, rejected and expired ones")
    listing.add_argument("--json", action="store_true", help="machine-readable output")
    listing.add_argument("--ids", action="store_true", help="only the approval ids, one per line")
    listing.add_argument("--task", help="only this task's proposals (e.g. triage)")
    show = sub.add_parser("show", help="one proposal: summary, real arguments, why, decisions, state")
    show.add_argument("id", help="the approval id, e.g. ap_0123456789abcdef01234567")
    show.add_argument("--json", action="store_true", help="machine-readable output")
    parsers = [listing, show]
    for verb in Choice:
        decide = sub.add_parser(
            verb.value, help=f"{verb.value} a proposal as yourself (a configured reviewer for its tool)"
        )
        decide.add_argument("id", help="the approval id")
        decide.add_argument(
            "--as",
            dest="reviewer",
            metavar="REVIEWER_ID",
            help=f"your reviewer id (default: ${REVIEWER_ENV})",
        )
        decide.add_argument("--yes", action="store_true", help="skip the typed confirmation")
        decide.add_argument(
            "--wait",
            action="store_true",
            help=f"then wait (up to {WAIT_SECONDS} s) for the worker to act on it, and say what it did",
        )
        if verb is Choice.REJECT:
            decide.add_argument(
                "--reason",
                default="",
                help=f"why (optional, at most {MAX_REASON_CHARS} characters; the other reviewers see it)",
            )
        parsers.append(decide)
    parsers.append(_edit_parser(sub))
    parsers.append(add_audit_parser(sub))  # `approvals audit`: lockgate_infra.cli.audit
    for parser in parsers:
        parser.add_argument("--config", type=Path, default=default_config, help="lockgate.toml (reviewers)")
        parser.set_defaults(run=run)
    return parsers


def _edit_parser(sub: Any) -> argparse.ArgumentParser:
    """`approvals edit ID --set FIELD=VALUE`: approve a changed version of a proposal."""
    edit = sub.add_parser(
        "edit",
        help="approve a changed version: set fields the tool marks editable (your approval counts once)",
    )
    edit.add_argument("id", help="the approval id")
    edit.add_argument(
        "--set",
        dest="changes",
        action="append",
        required=True,
        metavar="FIELD=VALUE",
        help="a new value for an editable field (repeatable), e.g. --set amount=40.00",
    )
    edit.add_argument(
        "--as", dest="reviewer", metavar="REVIEWER_ID", help=f"your reviewer id (default: ${REVIEWER_ENV})"
    )
    edit.add_argument("--yes", action="store_true", help="skip the typed confirmation")
    edit.add_argument(
        "--wait",
        action="store_true",
        help=f"then wait (up to {WAIT_SECONDS} s) for the worker to act on it, and say what it did",
    )
    return edit  # type: ignore[no-any-return]


@dataclass(frozen=True)
class ApprovalsCommand:
    """The operator's view of one stack: read the queue, record decisions (as the POST does)."""

    config: ApprovalsConfig
    queue: ReviewQueue
    recorder: DecisionRecorder
    refusals: RefusalLog | None = None  # a refused decision on a known proposal is kept as a row

    def refused(self, approval_id: str, reviewer_id: str, why: DecisionOutcome | Why) -> None:
        """Keep a decision refused on a known proposal, as a link's or a click's is kept."""
        if self.refusals is not None:
            code = why if isinstance(why, Why) else why_refused(why)
            self.refusals.record(approval_id, "cli", reviewer_id, code)

    @classmethod
    def for_target(
        cls, target: Target, config: ApprovalsConfig, clock: Clock, checks: CheckVersion | None = None
    ) -> ApprovalsCommand:
        """Wired to a local or deployed stack's tables and queue; ``checks``: its worker, for edits."""
        db = target.client("dynamodb")
        decisions = DecisionStore(db, target.name("DecisionsTable"))
        return cls(
            config=config,
            queue=ReviewQueue(ProposalStore(db, target.name("ApprovalsTable")), decisions, config, clock),
            recorder=DecisionRecorder(
                decisions=decisions,
                config=config,
                inbox=InboxStore(db, target.name("InboxTable")),
                queue=InboxQueue(target.client("sqs"), target.name("InboxQueue")),
                clock=clock,
                log=logging.getLogger("lockgate.approvals"),  # warnings reach stderr
                metrics=CountingMetrics(),
                checks=checks,
            ),
            refusals=RefusalLog(db, target.name("DecisionsTable"), clock, QUIET, CountingMetrics()),
        )


def run_approvals(
    args: argparse.Namespace,
    target: Target,
    *,
    environ: Mapping[str, str] | None = None,
    stdin: TextIO | None = None,
    out: TextIO | None = None,
) -> int:
    """Run one `lockgate approvals` subcommand; Refused (exit 2) says why nothing was decided."""
    out = out or sys.stdout
    approvals = load_config(args.config, target.stage).approvals  # a prod stack: prod's reviewers
    if args.approvals_command == "audit":
        return run_audit(args, target, approvals, out)
    checks = worker_checks(target) if args.approvals_command == "edit" else None  # only an edit asks it
    command = ApprovalsCommand.for_target(target, approvals, SystemClock(), checks)
    if args.approvals_command == "list":
        statuses = command.queue.listing(include_settled=args.all)
        if args.task:
            statuses = [s for s in statuses if s.proposal.task == args.task]
        if args.ids:
            out.write("".join(f"{s.proposal.approval_id}\n" for s in statuses))
        elif args.json:
            out.write(json.dumps([as_dict(s) for s in statuses], indent=2) + "\n")
        else:
            out.write(table(statuses, with_state=args.all))
        return 0
    status = command.queue.status(args.id)
    if status is None:
        raise Refused(f"no proposal {args.id!r}")
    if args.approvals_command == "show":
        out.write(
            json.dumps(as_dict(status), indent=2) + "\n" if args.json else details(status, command.config)
        )
        return 0
    env = os.environ if environ is None else environ
    reason = checked_reason(getattr(args, "reason", ""))  # only `reject` has --reason
    if reason is None:
        raise Refused(f"a reason is at most {MAX_REASON_CHARS} characters; nothing was decided")
    edit = changes_from(args.changes) if args.approvals_command == "edit" else None
    verdict = Choice.APPROVE if edit is not None else Choice(args.approvals_command)
    outcome = _decide(
        command, status, verdict, args.reviewer or env.get(REVIEWER_ENV), args.yes, stdin, out, reason, edit
    )
    if args.wait:
        out.write(waited(command.queue, target, status.proposal.approval_id, verdict, outcome) + "\n")
    return 0


def _decide(
    command: ApprovalsCommand,
    status: ProposalStatus,
    verdict: Choice,
    reviewer_id: str | None,
    yes: bool,
    stdin: TextIO | None,
    out: TextIO,
    reason: str = "",
    edit: dict[str, str] | None = None,
) -> DecisionOutcome:
    proposal = status.proposal
    if not reviewer_id:
        raise Refused(f"say who you are: --as REVIEWER_ID or {REVIEWER_ENV}=REVIEWER_ID")
    if reviewer_id not in {r.id for r in command.config.reviewers}:
        command.refused(proposal.approval_id, reviewer_id, Why.UNKNOWN_REVIEWER)
        raise Refused(f"{clean(reviewer_id)!r} is not a reviewer in the config; nothing was decided")
    if reviewer_id not in status.eligible:
        command.refused(proposal.approval_id, reviewer_id, Why.NO_ROLE)
        allowed = ", ".join(status.eligible) or "nobody"
        raise Refused(
            f"{reviewer_id} may not decide {proposal.approval_id}: it needs "
            f"{status.requirement.describe()} (allowed: {allowed}); nothing was decided"
        )
    if status.state is not State.PENDING:
        command.refused(proposal.approval_id, reviewer_id, SETTLED[status.state])
        raise Refused(f"{proposal.approval_id} is {status.state.value}; nothing was decided")
    if not yes:
        what = "approve your edit of" if edit is not None else verdict.value
        _confirm(status, what, reviewer_id, sys.stdin if stdin is None else stdin, out)
    try:
        outcome = command.recorder.record(
            proposal,
            reviewer_id,
            verdict,
            via="cli",
            reason=reason,
            seen=status.current.fingerprint,
            edit=edit,
        )
    except EditRefused as exc:
        command.refused(proposal.approval_id, reviewer_id, Why.EDIT_REFUSED)
        raise Refused(f"{exc}; nothing was decided") from exc
    after = command.queue.status(proposal.approval_id) if outcome.recorded else None
    shown = after or status
    message = DECISION_MESSAGES[outcome].format(
        id=proposal.approval_id,
        who=reviewer_id,
        summary=clean(shown.summary),
        rule=clean(shown.requirement.describe()),
    )
    if after is not None and after.current.n:  # the version that runs, and who made it
        message += f" (edited by {after.current.editor}; proposed: {clean(proposal.summary)})"
    if not outcome.recorded:
        command.refused(proposal.approval_id, reviewer_id, outcome)
        raise Refused(message)
    out.write(message + "\n")
    return outcome


def _confirm(status: ProposalStatus, what: str, reviewer_id: str, stdin: TextIO | None, out: TextIO) -> None:
    """A person types the approval id's last characters; without a terminal there is no person to ask."""
    if stdin is None or not stdin.isatty():
        raise Refused("no terminal to confirm on: run it in one, or pass --yes; nothing was decided")
    tail = status.proposal.approval_id[-CONFIRM_CHARS:]
    out.write(details(status, None))
    out.write(f"\nTo {what} this as {reviewer_id}, type {tail}: ")
    out.flush()
    if stdin.readline().strip() != tail:
        raise Refused("confirmation did not match; nothing was decided")
