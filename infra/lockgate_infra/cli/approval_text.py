"""How `lockgate approvals` prints proposals: a table, one proposal's details, or JSON.

Everything a proposal holds can quote an email: control characters are shown escaped, never sent
to the terminal.
"""

from __future__ import annotations

import json
import time
from typing import Any

from lockgate.approvals.decisions import DecisionOutcome
from lockgate.approvals.review_queue import ProposalStatus
from lockgate.approvals.versions import Version, editable
from lockgate.config import ApprovalsConfig
from lockgate.errors import LockgateError

# Summaries and the assistant's words can carry text from an email: never let it drive the terminal.
_CONTROL = {
    c: f"\\u{c:04x}"
    for c in (*range(0x20), *range(0x7F, 0xA0), *range(0x202A, 0x202F), *range(0x2066, 0x206A))
}


def table(statuses: list[ProposalStatus], *, with_state: bool) -> str:
    """One line per proposal (`lockgate approvals list`)."""
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
                _clip(s.summary, 48),
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


def details(status: ProposalStatus, config: ApprovalsConfig | None) -> str:
    """One proposal in full (`lockgate approvals show`): the page's content, and every decision's reason."""
    p = status.proposal
    lines = [
        f"{p.approval_id}  {p.tool}  {status.state.value.upper()}",
        f"summary:    {clean(status.summary)}",
        *([f"proposed:   {clean(p.summary)} (the assistant's; edited below)"] if status.versions else []),
        f"rule:       {clean(status.requirement.describe())}",
        f"task:       {clean(p.task)}   run: {clean(p.run_id)}   requested by: {clean(p.requester)}",
        # Edited, the current version runs, not these (it follows the edits below).
        "arguments as proposed (an edited version below replaces them):"
        if status.versions
        else "arguments (exactly what will run):",
        *(f"  {clean(line)}" for line in json.dumps(p.args, indent=2, ensure_ascii=False).splitlines()),
        "unverified — the assistant's own words, not checked:",
        f"  {clean(p.unverified_reason) or '(none)'}",
        "why a person is asked:",
        *(f"  - {clean(why)}" for why in p.why),
        "facts when proposed:" + ("" if p.facts else " none recorded"),
        *(f"  {clean(f.label)}{'' if f.verified else ' (UNVERIFIED)'}: {clean(f.value)}" for f in p.facts),
        f"created:    {_when(p.created_at)}   expires: {_when(p.expires_at)}",
        f"needs:      {status.requirement.reviewers_required} reviewer(s)"
        + (f" from: {', '.join(status.eligible) or 'nobody'}" if config else ""),
        *(
            f"edited:     version {v.n} by {clean(v.editor)} at {_when(v.at)}: "
            + ", ".join(f"{k} {_shown(a)} -> {_shown(b)}" for k, (a, b) in sorted(v.changes.items()))
            + (f" ({clean(v.summary)})" if v.summary else "")
            for v in status.versions
        ),
        *(
            ["arguments of the current version (what will run if approved):"]
            + [f"  {clean(line)}" for line in json.dumps(status.current.args, indent=2).splitlines()]
            if status.versions
            else []
        ),
        "decisions:" + ("" if status.decisions else " none yet"),
        *(
            f"  {d.reviewer}  {d.verdict.value}{f' version {d.version}' if d.version else ''}"
            f"  {_when(d.decided_at)}  via {d.via}" + (f"\n    reason: {clean(d.reason)}" if d.reason else "")
            for d in status.decisions
        ),
    ]
    return "\n".join(lines) + "\n"


def _shown(value: Any) -> str:
    return clean(value if isinstance(value, str) else json.dumps(value))


def as_dict(status: ProposalStatus) -> dict[str, Any]:
    """One proposal as JSON (`--json`)."""
    p = status.proposal
    return {
        "approval_id": p.approval_id,
        "state": status.state.value,
        "task": p.task,
        "run_id": p.run_id,
        "tool": p.tool,
        "summary": status.summary,
        "proposed_summary": p.summary,
        "args": p.args,
        "fingerprint": p.fingerprint,
        "unverified_reason": p.unverified_reason,
        "why": list(p.why),
        "requester": p.requester,
        "created_at": p.created_at,
        "expires_at": p.expires_at,
        "reviewers_required": status.requirement.reviewers_required,
        "rule": status.requirement.describe(),
        "requirement": status.requirement.to_json(),
        "may_decide": list(status.eligible),
        "facts": [{"label": f.label, "value": f.value, "verified": f.verified} for f in p.facts],
        "decisions": [
            {
                "reviewer": d.reviewer,
                "verdict": d.verdict.value,
                "decided_at": d.decided_at,
                "via": d.via,
                "reason": d.reason,
                "version": d.version,
            }
            for d in status.decisions
        ],
        "editable": sorted(editable(p)),
        "versions": [version_dict(v) for v in status.versions],
    }


def version_dict(version: Version) -> dict[str, Any]:
    """One edited version as JSON: who, when, what changed, the arguments and their fingerprint."""
    return {
        "version": version.n,
        "editor": version.editor,
        "at": version.at,
        "changes": {k: {"from": a, "to": b} for k, (a, b) in sorted(version.changes.items())},
        "args": version.args,
        "fingerprint": version.fingerprint,
        "summary": version.summary,
        "requirement": version.requirement.to_json() if version.requirement else None,
    }


def _decisions_so_far(status: ProposalStatus) -> str:
    decided = ", ".join(f"{d.reviewer}:{d.verdict.value}" for d in status.decisions) or "none"
    return f"{decided} ({status.requirement.reviewers_required} needed)"


def _when(epoch: int) -> str:
    return time.strftime("%Y-%m-%d %H:%MZ", time.gmtime(epoch))


def clean(text: str) -> str:
    """Control characters (and bidirectional overrides) shown escaped."""
    return text.translate(_CONTROL)


def _clip(text: str, width: int) -> str:
    text = clean(text)
    return text if len(text) <= width else text[: width - 1] + "…"


# What `approvals approve|edit|reject` prints for each outcome of a decision.
DECISION_MESSAGES = {
    DecisionOutcome.APPROVED: "approved {id} as {who}: {summary} — it will run once, within the hour",
    DecisionOutcome.REJECTED: "rejected {id} as {who}: {summary} — it will not happen",
    DecisionOutcome.AWAITING: (
        "recorded {who}'s approval of {id}: {summary}; it needs {rule}, so another reviewer must also approve"
    ),
    DecisionOutcome.ALREADY_DECIDED: "{who} has already decided {id}; the first decision stands",
    DecisionOutcome.ALREADY_APPROVED: "{id} is already approved; nothing was decided",
    DecisionOutcome.ALREADY_REJECTED: "{id} is already rejected; nothing was decided",
    DecisionOutcome.EXPIRED: "{id} has expired; nothing was decided",
    DecisionOutcome.CHANGED: "{id}'s stored arguments changed since they were proposed; nothing was decided",
    DecisionOutcome.NOT_ALLOWED: "{who} may not decide {id}; nothing was decided",
    DecisionOutcome.EDITED: "{id} was edited by another reviewer just now: show it again; nothing decided",
}


class Refused(LockgateError):
    """The command was refused; nothing was decided."""


def changes_from(pairs: list[str]) -> dict[str, str]:
    """``["amount=40.00", ...]`` as a dict; Refused for a pair without ``=`` or a field set twice."""
    changes: dict[str, str] = {}
    for pair in pairs:
        field, sep, value = pair.partition("=")
        if not sep or not field.strip():
            raise Refused(f"--set takes FIELD=VALUE, got {clean(pair)!r}; nothing was decided")
        if field.strip() in changes:
            raise Refused(f"{field.strip()} is set twice; nothing was decided")
        changes[field.strip()] = value
    return changes
