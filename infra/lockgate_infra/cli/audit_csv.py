"""The audit export as CSV: one row per event (proposed, edited, decided, refused, outcome) under fixed
columns, so it opens in a spreadsheet.

A cell a spreadsheet could take for a formula (it starts with ``=``, ``+``, ``-``, ``@``, a tab or a
line break, spaces first or not) is written with a ``'`` in front, and so is a cell that starts with
``'``: the reader takes exactly one ``'`` off, so every value comes back as it was.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TextIO

from lockgate.approvals.audit import AuditOutcome, AuditRecord, AuditRefusal, decision_order, refusal_order
from lockgate.approvals.standing import DecisionRecord
from lockgate.approvals.versions import Version
from lockgate.config.rules import Requirement
from lockgate_infra.cli.audit_json import (
    OUTCOME_FIELDS,
    AuditFileError,
    as_text,
    decision_of,
    epoch,
    version_of,
    when,
)

EVENTS = ("proposed", "edited", "decided", "refused", "outcome")
COLUMNS = (
    "approval_id",
    "event",
    "at",
    "who",
    "version",
    "verdict",
    "via",
    "reason",
    "channel",
    "fingerprint",
    "args",
    "changes",
    "task",
    "tool",
    "summary",
    "run_id",
    "why",
    "unverified_reason",
    "reviewers_required",
    "rule",
    "expires_at",
    "state",
    "ledger_state",
    "ledger_at",
    "worker_event",
    "worker_status",
    "worker_outcome",
    "worker_at",
)
FORMULA_START = frozenset("=+-@\t\r\n")
ESCAPE = "'"


def write_rows(records: Iterable[AuditRecord], out: TextIO) -> tuple[int, int]:
    """The header, then each record's rows; (proposals, rows) written."""
    writer = csv.writer(out, quoting=csv.QUOTE_ALL)
    writer.writerow(COLUMNS)
    proposals = rows = 0
    for record in records:
        proposals += 1
        for row in as_rows(record):
            writer.writerow([neutralised(row.get(column, "")) for column in COLUMNS])
            rows += 1
    return proposals, rows


def as_rows(record: AuditRecord) -> list[dict[str, str]]:
    """One proposal as CSV rows: proposed first, outcome last, the events between by time."""
    context = {
        "approval_id": record.approval_id,
        "task": record.task,
        "tool": record.tool,
        "summary": record.summary,
    }
    proposed = {
        "event": "proposed",
        "at": when(record.created_at),
        "who": record.requester,
        "version": "0",
        "fingerprint": record.fingerprint,
        "args": as_text(record.args),
        "run_id": record.run_id,
        "why": as_text(list(record.why)),
        "unverified_reason": record.unverified_reason,
        "reviewers_required": str(record.reviewers_required),
        "rule": _rule(record.requirement),
        "expires_at": when(record.expires_at),
    }
    events = sorted(
        [
            *((v.at, _edited_row(v)) for v in record.versions),
            *((d.decided_at, _decided_row(d)) for d in record.decisions),
            *((r.at, _refused_row(r)) for r in record.refusals),
        ],
        key=lambda event: event[0],
    )
    rows = (proposed, *(row for _, row in events), _outcome_row(record.outcome))
    return [{**context, **row} for row in rows]


def _edited_row(v: Version) -> dict[str, str]:
    return {
        "event": "edited",
        "at": when(v.at),
        "who": v.editor,
        "version": str(v.n),
        "fingerprint": v.fingerprint,
        "args": as_text(v.args),
        "changes": as_text({k: list(change) for k, change in v.changes.items()}),
        "summary": v.summary,
        "rule": _rule(v.requirement),
    }


def _rule(requirement: Requirement | None) -> str:
    """Who had to approve, by which rules, as JSON text ("" for a record from before rules were kept)."""
    return as_text(requirement.to_json()) if requirement else ""


def _requirement(cell: str) -> Any:
    return json.loads(cell) if cell else None


def _decided_row(d: DecisionRecord) -> dict[str, str]:
    return {
        "event": "decided",
        "at": when(d.decided_at),
        "who": d.reviewer,
        "version": str(d.version),
        "verdict": d.verdict.value,
        "via": d.via,
        "reason": d.reason,
        "fingerprint": d.fingerprint,
    }


def _refused_row(r: AuditRefusal) -> dict[str, str]:
    return {"event": "refused", "at": when(r.at), "who": r.who, "channel": r.channel, "reason": r.why}


def _outcome_row(o: AuditOutcome) -> dict[str, str]:
    return {
        "event": "outcome",
        "at": when(o.ledger_at or o.worker_at),  # when the action ran, or the worker handled it
        **{name: getattr(o, name) for name in OUTCOME_FIELDS},
        "ledger_at": when(o.ledger_at),
        "worker_at": when(o.worker_at),
    }


def from_csv(path: Path, text: str) -> Iterator[AuditRecord]:
    """The records in a CSV export's text; AuditFileError where it is not one."""
    reader = csv.DictReader(io.StringIO(text, newline=""))
    missing = [c for c in COLUMNS if c not in (reader.fieldnames or ())]
    if missing:
        names = ", ".join(missing[:3]) + (", …" if len(missing) > 3 else "")
        raise AuditFileError(
            f"{path}: not an audit CSV ({len(missing)} of its {len(COLUMNS)} columns missing: {names})"
        )
    group: list[dict[str, str]] = []
    for raw in reader:
        row = {k: restored(v or "") for k, v in raw.items() if k}
        where = f"{path}:{reader.line_num}"
        if row["event"] not in EVENTS:
            raise AuditFileError(f"{where}: unknown event {row['event']!r}")
        starts = row["event"] == "proposed"
        if starts != (not group) or (group and row["approval_id"] != group[0]["approval_id"]):
            raise AuditFileError(
                f"{where}: {row['event']} row out of place (each proposal: proposed ... outcome)"
            )
        group.append(row)
        if row["event"] == "outcome":
            yield _from_group(where, group)
            group = []
    if group:
        raise AuditFileError(f"{path}: {group[0]['approval_id']} has no outcome row (a cut-off file?)")


def _from_group(where: str, rows: list[dict[str, str]]) -> AuditRecord:
    try:
        return _record_of(rows)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        raise AuditFileError(f"{where}: not an audit record ({type(exc).__name__}: {exc})") from None


def _record_of(rows: list[dict[str, str]]) -> AuditRecord:
    p, o = rows[0], rows[-1]
    of = {kind: [r for r in rows if r["event"] == kind] for kind in EVENTS}
    versions = [
        version_of(
            r["version"],
            r["who"],
            r["at"],
            json.loads(r["changes"]),
            json.loads(r["args"]),
            r["fingerprint"],
            r["summary"],
            _requirement(r["rule"]),
        )
        for r in of["edited"]
    ]
    decisions = [
        decision_of(
            p["approval_id"],
            r["who"],
            r["verdict"],
            r["version"],
            r["via"],
            r["reason"],
            r["at"],
            r["fingerprint"],
        )
        for r in of["decided"]
    ]
    refusals = [AuditRefusal(epoch(r["at"]) or 0, r["channel"], r["who"], r["reason"]) for r in of["refused"]]
    return AuditRecord(
        approval_id=p["approval_id"],
        task=p["task"],
        run_id=p["run_id"],
        tool=p["tool"],
        summary=p["summary"],
        args=dict(json.loads(p["args"])),
        fingerprint=p["fingerprint"],
        why=tuple(json.loads(p["why"])),
        requester=p["who"],
        unverified_reason=p["unverified_reason"],
        reviewers_required=int(p["reviewers_required"]),
        requirement=Requirement.from_json(_requirement(p["rule"])),
        created_at=epoch(p["at"]) or 0,
        expires_at=epoch(p["expires_at"]) or 0,
        versions=tuple(sorted(versions, key=lambda v: v.n)),
        decisions=tuple(sorted(decisions, key=decision_order)),
        refusals=tuple(sorted(refusals, key=refusal_order)),
        outcome=AuditOutcome(
            **{name: o[name] for name in OUTCOME_FIELDS},
            ledger_at=epoch(o["ledger_at"]),
            worker_at=epoch(o["worker_at"]),
        ),
    )


def neutralised(value: str) -> str:
    """``value`` as a spreadsheet cell that is never a formula: ``'`` in front where it could be one."""
    if value.startswith(ESCAPE) or value.lstrip(" ")[:1] in FORMULA_START:
        return ESCAPE + value
    return value


def restored(cell: str) -> str:
    """The value ``neutralised`` was given."""
    return cell[1:] if cell.startswith(ESCAPE) else cell
