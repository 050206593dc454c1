"""`lockgate approvals`: list, show, approve and reject proposals from an operator's terminal.

Approve and reject record the caller (``--as`` or LOCKGATE_REVIEWER, a reviewer allowed for the tool)
through the link's ``DecisionRecorder``; a person confirms by typing the id's end (``--yes`` skips).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from lockgate.approvals.decisions import Choice, DecisionOutcome, DecisionRecorder, DecisionStore, State
from lockgate.approvals.proposals import ProposalStore
from lockgate.approvals.review_queue import ProposalStatus, ReviewQueue
from lockgate.clock import Clock, SystemClock
from lockgate.config import ApprovalsConfig, load_config
from lockgate.errors import LockgateError
from lockgate.inbox.queue import InboxQueue
from lockgate.inbox.store import InboxStore
from lockgate.telemetry import CountingMetrics
from lockgate_infra.cli.targets import Target

REVIEWER_ENV = "LOCKGATE_REVIEWER"
CONFIRM_CHARS = 6
# Summaries and the assistant's words can carry text from an email: never let it drive the terminal.
_CONTROL = {
    c: f"\\u{c:04x}"
    for c in (*range(0x20), *range(0x7F, 0xA0), *range(0x202A, 0x202F), *range(0x2066, 0x206A))
}


class Refused(LockgateError):
    """The command was refused; nothing was decided."""


def add_approvals_parser(
    commands: Any, *, default_config: Path, run: Callable[[argparse.Namespace], int]
) -> list[argparse.ArgumentParser]:
    """The `approvals` subcommands; returns them so the caller adds --local/--stack."""
    approvals = commands.add_parser("approvals", help="proposals waiting for a person: list, show, decide")
    sub = approvals.add_subparsers(dest="approvals_command", required=True)
    listing = sub.add_parser("list", help="pending proposals (--all: every stored one)")
    listing.add_argument("--all", action="store_true", help="include approved, rejected and expired ones")
    listing.add_argument("--json", action="store_true", help="machine-readable output")
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
        parsers.append(decide)
    for parser in parsers:
        parser.add_argument("--config", type=Path, default=default_config, help="lockgate.toml (reviewers)")
        parser.set_defaults(run=run)
    return parsers


@dataclass(frozen=True)
class ApprovalsCommand:
    """The operator's view of one stack: read the queue, record decisions (as the POST does)."""

    config: ApprovalsConfig
    queue: ReviewQueue
    recorder: DecisionRecorder

    @classmethod
    def for_target(cls, target: Target, config: ApprovalsConfig, clock: Clock) -> ApprovalsCommand:
        """Wired to a local or deployed stack's tables and queue."""
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
            ),
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
    command = ApprovalsCommand.for_target(target, approvals, SystemClock())
    if args.approvals_command == "list":
        statuses = command.queue.listing(include_settled=args.all)
        out.write(
            json.dumps([_as_dict(s) for s in statuses], indent=2) + "\n"
            if args.json
            else _table(statuses, with_state=args.all)
        )
        return 0
    status = command.queue.status(args.id)
    if status is None:
        raise Refused(f"no proposal {args.id!r}")
    if args.approvals_command == "show":
        out.write(
            json.dumps(_as_dict(status), indent=2) + "\n" if args.json else _details(status, command.config)
        )
        return 0
    env = os.environ if environ is None else environ
    return _decide(
        command,
        status,
        Choice(args.approvals_command),
        args.reviewer or env.get(REVIEWER_ENV),
        args.yes,
        stdin,
        out,
    )


def _decide(
    command: ApprovalsCommand,
    status: ProposalStatus,
    verdict: Choice,
    reviewer_id: str | None,
    yes: bool,
    stdin: TextIO | None,
    out: TextIO,
) -> int:
    proposal = status.proposal
    if not reviewer_id:
        raise Refused(f"say who you are: --as REVIEWER_ID or {REVIEWER_ENV}=REVIEWER_ID")
    if reviewer_id not in {r.id for r in command.config.reviewers}:
        raise Refused(f"{reviewer_id!r} is not a reviewer in the config; nothing was decided")
    if command.recorder.reviewer(proposal.tool, reviewer_id) is None:
        allowed = ", ".join(r.id for r in command.config.reviewers_for(proposal.tool)) or "nobody"
        raise Refused(
            f"{reviewer_id} may not decide {proposal.tool} (allowed: {allowed}); nothing was decided"
        )
    if status.state is not State.PENDING:
        raise Refused(f"{proposal.approval_id} is {status.state.value}; nothing was decided")
    if not yes:
        _confirm(status, verdict, reviewer_id, sys.stdin if stdin is None else stdin, out)
    outcome = command.recorder.record(proposal, reviewer_id, verdict, via="cli")
    message = _OUTCOMES[outcome].format(
        id=proposal.approval_id, who=reviewer_id, summary=_clean(proposal.summary)
    )
    if not outcome.recorded:
        raise Refused(message)
    out.write(message + "\n")
    return 0


_OUTCOMES = {
    DecisionOutcome.APPROVED: "approved {id} as {who}: {summary} — it will run once, within the hour",
    DecisionOutcome.REJECTED: "rejected {id} as {who}: {summary} — it will not happen",
    DecisionOutcome.AWAITING: "recorded {who}'s approval of {id}; another reviewer must also approve",
    DecisionOutcome.ALREADY_DECIDED: "{who} has already decided {id}; the first decision stands",
    DecisionOutcome.ALREADY_APPROVED: "{id} is already approved; nothing was decided",
    DecisionOutcome.ALREADY_REJECTED: "{id} is already rejected; nothing was decided",
    DecisionOutcome.EXPIRED: "{id} has expired; nothing was decided",
    DecisionOutcome.CHANGED: "{id}'s stored arguments changed since they were proposed; nothing was decided",
    DecisionOutcome.NOT_ALLOWED: "{who} may not decide {id}; nothing was decided",
}


def _confirm(
    status: ProposalStatus, verdict: Choice, reviewer_id: str, stdin: TextIO | None, out: TextIO
) -> None:
    """A person types the approval id's last characters; without a terminal there is no person to ask."""
    if stdin is None or not stdin.isatty():
        raise Refused("no terminal to confirm on: run it in one, or pass --yes; nothing was decided")
    tail = status.proposal.approval_id[-CONFIRM_CHARS:]
    out.write(_details(status, None))
    out.write(f"\nTo {verdict.value} this as {reviewer_id}, type {tail}: ")
    out.flush()
    if stdin.readline().strip() != tail:
        raise Refused("confirmation did not match; nothing was decided")


def _table(statuses: list[ProposalStatus], *, with_state: bool) -> str:
    if not statuses:
        return "no proposals waiting for a person\n"
    rows = [
        (
            "ID",
            *(("STATE",) if with_state else ()),
            "TASK",
            "SUMMARY",
            "WHY",
            "CREATED",
            "EXPIRES",
            "DECISIONS",
        )
    ]
    for s in statuses:
        p = s.proposal
        rows.append(
            (
                p.approval_id,
                *((s.state.value,) if with_state else ()),
                _clip(p.task, 16),
                _clip(p.summary, 48),
                _clip("; ".join(p.why), 60),
                _when(p.created_at),
                _when(p.expires_at),
                _decisions_so_far(s),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return "".join(
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False)) + "  " + row[-1] + "\n"
        for row in rows
    )


def _details(status: ProposalStatus, config: ApprovalsConfig | None) -> str:
    p = status.proposal
    lines = [
        f"{p.approval_id}  {p.tool}  {status.state.value.upper()}",
        f"summary:    {_clean(p.summary)}",
        f"task:       {_clean(p.task)}   run: {_clean(p.run_id)}   requested by: {_clean(p.requester)}",
        "arguments (exactly what will run):",
        *(f"  {_clean(line)}" for line in json.dumps(p.args, indent=2, ensure_ascii=False).splitlines()),
        "unverified — the assistant's own words, not checked:",
        f"  {_clean(p.unverified_reason) or '(none)'}",
        "why a person is asked:",
        *(f"  - {_clean(why)}" for why in p.why),
        f"created:    {_when(p.created_at)}   expires: {_when(p.expires_at)}",
        f"needs:      {p.reviewers_required} reviewer(s)"
        + (f" from: {', '.join(r.id for r in config.reviewers_for(p.tool))}" if config else ""),
        "decisions:" + ("" if status.decisions else " none yet"),
        *(f"  {d.reviewer}  {d.verdict.value}  {_when(d.decided_at)}  via {d.via}" for d in status.decisions),
    ]
    return "\n".join(lines) + "\n"


def _as_dict(status: ProposalStatus) -> dict[str, Any]:
    p = status.proposal
    return {
        "approval_id": p.approval_id,
        "state": status.state.value,
        "task": p.task,
        "run_id": p.run_id,
        "tool": p.tool,
        "summary": p.summary,
        "args": p.args,
        "fingerprint": p.fingerprint,
        "unverified_reason": p.unverified_reason,
        "why": list(p.why),
        "requester": p.requester,
        "created_at": p.created_at,
        "expires_at": p.expires_at,
        "reviewers_required": p.reviewers_required,
        "decisions": [
            {"reviewer": d.reviewer, "verdict": d.verdict.value, "decided_at": d.decided_at, "via": d.via}
            for d in status.decisions
        ],
    }


def _decisions_so_far(status: ProposalStatus) -> str:
    decided = ", ".join(f"{d.reviewer}:{d.verdict.value}" for d in status.decisions) or "none"
    return f"{decided} ({status.proposal.reviewers_required} needed)"


def _when(epoch: int) -> str:
    return time.strftime("%Y-%m-%d %H:%MZ", time.gmtime(epoch))


def _clean(text: str) -> str:
    return text.translate(_CONTROL)


def _clip(text: str, width: int) -> str:
    text = _clean(text)
    return text if len(text) <= width else text[: width - 1] + "…"
