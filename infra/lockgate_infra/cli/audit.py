"""`lockgate approvals audit`: every proposal created in a time range, with its versions, decisions,
refusals and the outcome of its action, as JSON lines or CSV, for an auditor.

It only reads. The range is half-open, so consecutive exports (a week, then the next) never list a
proposal twice. A file given with ``--output`` is written beside its final name and moved into place
once complete, so a failed export never leaves half a file behind.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from lockgate.actions.ledger import Ledger
from lockgate.approvals.audit import AuditRecord, AuditTrail
from lockgate.approvals.proposals import ProposalStore
from lockgate.clock import Clock, SystemClock
from lockgate.config import ApprovalsConfig
from lockgate.errors import LockgateError
from lockgate.inbox.store import InboxStore
from lockgate_infra.cli.audit_files import CSV, FORMATS, JSONL, write_audit
from lockgate_infra.cli.audit_json import iso
from lockgate_infra.cli.targets import Target

# Epoch seconds (up to the year 5138); eight digits are a date (20261201), as ISO 8601 reads them.
EPOCH = re.compile(r"(?!\d{8}$)\d{1,11}(\.\d*)?")
WHEN_HELP = "an ISO date or time in UTC (2026-12-01, 2026-12-01T09:00:00Z) or epoch seconds"
BOM = "\ufeff"  # starts a CSV file, so that spreadsheets read it as UTF-8


class AuditRefused(LockgateError):
    """The export was refused (a bad time or range); nothing was written."""


def add_audit_parser(sub: Any) -> argparse.ArgumentParser:
    """`approvals audit --since WHEN [--until WHEN] [--format jsonl|csv] [--output FILE]`."""
    audit = sub.add_parser(
        "audit",
        help="export the proposals created in a time range, with their versions, decisions, "
        "refusals and outcomes, as JSON lines or CSV",
        description="Export every proposal created at or after --since and before --until: what was "
        "asked, each edited version, each decision, each refused attempt and what became of the action. "
        "It changes nothing.",
    )
    audit.add_argument("--since", required=True, metavar="WHEN", help=f"the range's start: {WHEN_HELP}")
    audit.add_argument("--until", metavar="WHEN", help="the range's end, not included (default: now)")
    audit.add_argument(
        "--format",
        choices=FORMATS,
        help="jsonl: one JSON object per proposal; csv: one row per event (default: csv for an "
        "--output ending in .csv, else jsonl)",
    )
    audit.add_argument(
        "--output",
        type=Path,
        metavar="FILE",
        help="write the export to FILE, replacing it once complete (default: standard output)",
    )
    return audit  # type: ignore[no-any-return]


def run_audit(
    args: argparse.Namespace,
    target: Target,
    config: ApprovalsConfig,
    out: TextIO | None = None,
    clock: Clock | None = None,
) -> int:
    """Write the export; AuditRefused (exit 2) for a bad time or an empty range."""
    out = out or sys.stdout
    clock = clock or SystemClock()
    since = parse_when(args.since, "--since")
    until = parse_when(args.until, "--until") if args.until else int(clock.now()) + 1
    if since >= until:
        end = f"--until {iso(until)}" if args.until else f"now ({iso(until - 1)})"
        raise AuditRefused(f"--since {iso(since)} is not before {end}; nothing was exported")
    form = args.format or (CSV if args.output and args.output.suffix.lower() == ".csv" else JSONL)
    records = audit_trail(target, config, clock).records(since, until)
    if args.output is None:
        write_audit(records, out, form)
        return 0
    proposals, lines = _write_file(args.output, records, form)
    unit = "row" if form == CSV else "line"
    out.write(f"wrote {_count(proposals, 'proposal')} ({_count(lines, unit)}) to {args.output}\n")
    return 0


def audit_trail(target: Target, config: ApprovalsConfig, clock: Clock) -> AuditTrail:
    """The audit trail of a local or deployed stack's tables (read-only)."""
    db = target.client("dynamodb")
    return AuditTrail(
        proposals=ProposalStore(db, target.name("ApprovalsTable")),
        dynamodb=db,
        decisions_table=target.name("DecisionsTable"),
        ledger=Ledger(db, target.name("StateTable"), clock),
        inbox=InboxStore(db, target.name("InboxTable")),
        config=config,
        clock=clock,
    )


def parse_when(text: str, flag: str) -> int:
    """``text`` (an ISO date or time, UTC unless it says otherwise, or epoch seconds) as epoch seconds."""
    given = text.strip()
    if EPOCH.fullmatch(given):
        return int(float(given))
    try:
        moment = datetime.fromisoformat(given.replace("z", "Z").replace("Z", "+00:00"))
    except ValueError:
        raise AuditRefused(f"{flag} {text!r} is not a time: give {WHEN_HELP}") from None
    return int((moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp())


def _write_file(path: Path, records: Iterable[AuditRecord], form: str) -> tuple[int, int]:
    """Write beside ``path``, then move it into place: readers see the old file or the whole new one."""
    if path.is_dir() or not path.parent.is_dir():
        where = path if path.is_dir() else path.parent
        raise AuditRefused(
            f"{where}: {'a folder' if path.is_dir() else 'no such folder'}; nothing was exported"
        )
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        with partial.open("w", encoding="utf-8", newline="") as file:
            if form == CSV:
                file.write(BOM)
            counts = write_audit(records, file, form)
        partial.replace(path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            partial.unlink()
    return counts


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"
