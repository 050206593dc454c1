"""The audit export as JSON lines: one object per proposal, its versions, decisions, refusals and
outcome nested in it; times UTC, ``2026-12-01T14:05:09Z``. The value helpers both formats share.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lockgate.approvals.audit import AuditOutcome, AuditRecord, AuditRefusal
from lockgate.approvals.standing import Choice, DecisionRecord
from lockgate.approvals.versions import Version
from lockgate.config.rules import Requirement

OUTCOME_FIELDS = ("state", "ledger_state", "worker_event", "worker_status", "worker_outcome")
_TIME = "%Y-%m-%dT%H:%M:%SZ"


class AuditFileError(ValueError):
    """A file that is not an audit export this version wrote; the message says where and why."""


def as_json(record: AuditRecord) -> dict[str, Any]:
    """One proposal as a JSON object."""
    o = record.outcome
    return {
        "approval_id": record.approval_id,
        "task": record.task,
        "run_id": record.run_id,
        "tool": record.tool,
        "summary": record.summary,
        "args": record.args,
        "fingerprint": record.fingerprint,
        "why": list(record.why),
        "requester": record.requester,
        "unverified_reason": record.unverified_reason,
        "reviewers_required": record.reviewers_required,
        "requirement": record.requirement.to_json() if record.requirement else None,
        "created_at": iso(record.created_at),
        "expires_at": iso(record.expires_at),
        "versions": [_version_json(v) for v in record.versions],
        "decisions": [_decision_json(d) for d in record.decisions],
        "refusals": [
            {"at": iso(r.at), "channel": r.channel, "who": r.who, "why": r.why} for r in record.refusals
        ],
        "outcome": {
            "state": o.state,
            "ledger_state": o.ledger_state,
            "ledger_at": iso(o.ledger_at),
            "worker_event": o.worker_event,
            "worker_status": o.worker_status,
            "worker_outcome": o.worker_outcome,
            "worker_at": iso(o.worker_at),
        },
    }


def from_json(data: dict[str, Any]) -> AuditRecord:
    """A record from the object ``as_json`` made; KeyError, TypeError or ValueError if it is not one."""
    o = data["outcome"]
    return AuditRecord(
        approval_id=str(data["approval_id"]),
        task=data["task"],
        run_id=data["run_id"],
        tool=data["tool"],
        summary=data["summary"],
        args=dict(data["args"]),
        fingerprint=data["fingerprint"],
        why=tuple(data["why"]),
        requester=data["requester"],
        unverified_reason=data["unverified_reason"],
        reviewers_required=int(data["reviewers_required"]),
        requirement=Requirement.from_json(data.get("requirement")),
        created_at=epoch(data["created_at"]) or 0,
        expires_at=epoch(data["expires_at"]) or 0,
        versions=tuple(
            version_of(
                v["version"],
                v["editor"],
                v["at"],
                v["changes"],
                v["args"],
                v["fingerprint"],
                v.get("summary", ""),
                v.get("requirement"),
            )
            for v in data["versions"]
        ),
        decisions=tuple(
            decision_of(
                str(data["approval_id"]),
                d["reviewer"],
                d["verdict"],
                d["version"],
                d["via"],
                d["reason"],
                d["at"],
                d["fingerprint"],
            )
            for d in data["decisions"]
        ),
        refusals=tuple(
            AuditRefusal(epoch(r["at"]) or 0, r["channel"], r["who"], r["why"]) for r in data["refusals"]
        ),
        outcome=AuditOutcome(
            **{name: str(o[name]) for name in OUTCOME_FIELDS},
            ledger_at=epoch(o["ledger_at"]),
            worker_at=epoch(o["worker_at"]),
        ),
    )


def _version_json(v: Version) -> dict[str, Any]:
    return {
        "version": v.n,
        "editor": v.editor,
        "at": iso(v.at),
        "changes": {k: list(change) for k, change in v.changes.items()},
        "args": v.args,
        "fingerprint": v.fingerprint,
        "summary": v.summary,
        "requirement": v.requirement.to_json() if v.requirement else None,
    }


def _decision_json(d: DecisionRecord) -> dict[str, Any]:
    return {
        "reviewer": d.reviewer,
        "verdict": d.verdict.value,
        "version": d.version,
        "via": d.via,
        "reason": d.reason,
        "at": iso(d.decided_at),
        "fingerprint": d.fingerprint,
    }


def from_line(path: Path, number: int, line: str) -> AuditRecord:
    """Line ``number`` of a JSON lines export; AuditFileError if it is not a record."""
    try:
        return from_json(json.loads(line))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise AuditFileError(f"{path}:{number}: not an audit record ({type(exc).__name__}: {exc})") from None


def iso(seconds: int | None) -> str | None:
    """Epoch seconds as ``2026-12-01T14:05:09Z``; None stays None."""
    return None if seconds is None else datetime.fromtimestamp(seconds, UTC).strftime(_TIME)


def epoch(text: str | None) -> int | None:
    """``iso``'s text as epoch seconds; None or "" is None."""
    if not text:
        return None
    return int(datetime.strptime(text, _TIME).replace(tzinfo=UTC).timestamp())


def when(seconds: int | None) -> str:
    """``iso``, with "" for None (a CSV cell)."""
    return iso(seconds) or ""


def as_text(value: Any) -> str:
    """A value as JSON text, keys sorted."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def version_of(  # noqa: PLR0913 - a version's exported values
    n: Any,
    editor: str,
    at: str,
    changes: dict[str, Any],
    args: Any,
    fp: str,
    summary: str = "",
    requirement: Any = None,
) -> Version:
    """A version from its exported values (an export from before versions kept a summary and a
    requirement has neither)."""
    return Version(
        int(n),
        dict(args),
        fp,
        editor,
        epoch(at) or 0,
        {k: (c[0], c[1]) for k, c in changes.items()},
        str(summary or ""),
        Requirement.from_json(requirement),
    )


def decision_of(
    approval_id: str, who: str, verdict: str, version: Any, via: str, reason: str, at: str, fp: str
) -> DecisionRecord:
    """A decision from its exported values."""
    return DecisionRecord(approval_id, who, Choice(verdict), epoch(at) or 0, fp, via, reason, int(version))
