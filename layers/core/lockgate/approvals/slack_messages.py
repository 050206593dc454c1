"""The Slack message for one proposal (Block Kit): what would run, why a person is asked, who may decide,
and Approve / Reject buttons (Edit too, when the tool allows edits); the approvals so far; then its
outcome in place of the buttons. The message's ``text`` (what a notification and a screen reader
show) says the same as its blocks.

Every word of it is built by code from the stored proposal and its edited versions (each edit is
shown, field by field: the summary is the proposal's own). Text Slack would parse (``<!channel>``,
``<url|label>``) is escaped; the assistant's own reason goes in plain text, marked unverified. A
button's value carries the approval id and the fingerprint of the version shown, nothing secret:
the click is trusted because Slack signed it, and the decision is re-checked against the stored
proposal (a click on a version edited since is refused).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from lockgate.approvals.decisions import Choice, DecisionRecord, State
from lockgate.approvals.edit_page import shown
from lockgate.approvals.proposals import Proposal
from lockgate.approvals.versions import Version, editable
from lockgate.config import Reviewer
from lockgate.config.rules import Requirement

APPROVE_ACTION = "lockgate_approve"
REJECT_ACTION = "lockgate_reject"
EDIT_ACTION = "lockgate_edit"  # opens the edit modal (lockgate.approvals.slack_modal); decides nothing
ACTIONS = {APPROVE_ACTION: Choice.APPROVE, REJECT_ACTION: Choice.REJECT}
_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})
_SEPARATOR = "|"
_MAX_TEXT = 2_900  # a section's text may be 3,000 characters


def escape(text: str) -> str:
    """Text Slack shows as written: no mentions, links or channel pings can be smuggled in."""
    return text.translate(_ESCAPES)[:_MAX_TEXT]


def button_value(proposal: Proposal, edits: Sequence[Version] = ()) -> str:
    """What a button carries: the approval id and the fingerprint of the version shown."""
    return f"{proposal.approval_id}{_SEPARATOR}{_latest(proposal, edits)[0]}"


def parse_button_value(value: str) -> tuple[str, str] | None:
    """(approval id, fingerprint) from a button's value, or None if it is not one of ours."""
    approval_id, separator, digest = value.rpartition(_SEPARATOR)
    if not separator or not approval_id or len(digest) != 64 or not digest.isalnum():
        return None
    return approval_id, digest


def utc_time(epoch: int) -> str:
    """``14:02 UTC``: when a decision was made, as reviewers read it."""
    return time.strftime("%H:%M UTC", time.gmtime(epoch))


def proposal_blocks(
    proposal: Proposal,
    reviewers: Sequence[Reviewer],
    decisions: Sequence[DecisionRecord] = (),
    edits: Sequence[Version] = (),
    requirement: Requirement | None = None,
) -> list[dict[str, Any]]:
    """The message for a pending proposal, with the buttons (and its edits and approvals so far).

    Edit is offered when the tool lets a reviewer change some arguments; anyone sees it, and only a
    reviewer who may decide gets the modal.
    """
    approvers = _approvers(decisions)
    blocks = _facts(proposal, reviewers, "Approval needed", edits, requirement)
    if approvers:
        blocks.append(_context(progress_line(proposal, approvers, requirement)))
    buttons = [_button("Approve", APPROVE_ACTION, proposal, "primary", edits)]
    if editable(proposal):
        buttons.append(_button("Edit…", EDIT_ACTION, proposal, None, edits))
    buttons.append(_button("Reject", REJECT_ACTION, proposal, "danger", edits))
    blocks.append({"type": "actions", "block_id": "lockgate_decide", "elements": buttons})
    return blocks


def message_for(
    proposal: Proposal,
    reviewers: Sequence[Reviewer],
    decisions: Sequence[DecisionRecord],
    state: State,
    edits: Sequence[Version] = (),
    requirement: Requirement | None = None,
) -> tuple[str, list[dict[str, Any]]]:
    """The message's text and blocks for the proposal's state: what the channel should show now.

    ``decisions``: the ones that count (approvals of the current version, rejections); ``edits``:
    its edited versions, oldest first; ``requirement``: what the current version needs, by which rule.
    """
    about = f"{proposal.task}: {_what(proposal, edits)}"
    if state is State.PENDING:
        approvers = _approvers(decisions)
        blocks = proposal_blocks(proposal, reviewers, decisions, edits, requirement)
        if not approvers:
            return fallback_text(proposal, edits), blocks
        return escape(f"{progress_line(proposal, approvers, requirement)} ({about})"), blocks
    if state is State.APPROVED:
        line = approved_line(decisions)
    elif state is State.REJECTED:
        line = rejected_line(decisions)
    else:
        line = "Expired — nobody decided in time; it will not happen"
    blocks = outcome_blocks(proposal, reviewers, line, _HEADERS[state], edits, requirement)
    return escape(f"{line} ({about})"), blocks


def outcome_blocks(
    proposal: Proposal,
    reviewers: Sequence[Reviewer],
    line: str,
    header: str = "Decided",
    edits: Sequence[Version] = (),
    requirement: Requirement | None = None,
) -> list[dict[str, Any]]:
    """The message once decided: the same facts, the outcome where the buttons were."""
    facts = _facts(proposal, reviewers, header, edits, requirement, decided=True)
    return [*facts, {"type": "section", "text": _mrkdwn(f"*{escape(line)}*")}]


def approved_line(decisions: Sequence[DecisionRecord]) -> str:
    """``Approved by alice at 14:02 UTC — runs once`` (both names when two approved)."""
    approvers = _approvers(decisions)
    names = " and ".join(d.reviewer for d in approvers)
    at = max((d.decided_at for d in approvers), default=0)
    return f"Approved by {names} at {utc_time(at)} — runs once"


def rejected_line(decisions: Sequence[DecisionRecord]) -> str:
    """``Rejected by bob at 14:03 UTC — it will not happen``."""
    rejection = next((d for d in decisions if d.verdict is Choice.REJECT), None)
    if rejection is None:
        return "Rejected — it will not happen"
    return f"Rejected by {rejection.reviewer} at {utc_time(rejection.decided_at)} — it will not happen"


def progress_line(
    proposal: Proposal, approvers: Sequence[DecisionRecord], requirement: Requirement | None = None
) -> str:
    """``1 of 2 approvals (alice at 14:02 UTC) — another reviewer must approve``."""
    who = ", ".join(f"{d.reviewer} at {utc_time(d.decided_at)}" for d in approvers)
    needed = requirement.reviewers_required if requirement else proposal.reviewers_required
    return f"{len(approvers)} of {needed} approvals ({who}) — another reviewer must approve before it runs"


def fallback_text(proposal: Proposal, edits: Sequence[Version] = ()) -> str:
    """The notification's plain text (what a phone's lock screen shows): true to a message with buttons."""
    return escape(
        f"Approval needed ({proposal.task}): {_what(proposal, edits)}. "
        "Approve or Reject in this message; nothing happens unless it is approved."
    )


def _what(proposal: Proposal, edits: Sequence[Version]) -> str:
    """What would run: the current version's own summary, and once edited, who changed what and what
    the assistant proposed (an edit recorded before versions kept a summary: the proposal's, marked)."""
    if not edits:
        return proposal.summary
    last = max(edits, key=lambda v: v.n)
    changed = [f"{k} {shown(proposal.args.get(k))} → {shown(v)}" for k, v in sorted(last.args.items())
               if proposal.args.get(k) != v]  # fmt: skip
    if not last.summary:
        return f"{proposal.summary}; edited by {last.editor}: {', '.join(changed)}"
    return f"{last.summary}; edited by {last.editor}: {', '.join(changed)} (proposed: {proposal.summary})"


def _latest(proposal: Proposal, edits: Sequence[Version]) -> tuple[str, dict[str, Any], str]:
    """The fingerprint, arguments and editor of the version reviewers decide now ("": as proposed)."""
    if not edits:
        return proposal.fingerprint, proposal.args, ""
    last = max(edits, key=lambda v: v.n)
    return last.fingerprint, last.args, last.editor


def _approvers(decisions: Sequence[DecisionRecord]) -> list[DecisionRecord]:
    return sorted((d for d in decisions if d.verdict is Choice.APPROVE), key=lambda d: d.decided_at)


_HEADERS = {State.APPROVED: "Approved", State.REJECTED: "Rejected", State.EXPIRED: "Expired"}


def _facts(
    proposal: Proposal,
    reviewers: Sequence[Reviewer],
    header: str,
    edits: Sequence[Version] = (),
    requirement: Requirement | None = None,
    *,
    decided: bool = False,
) -> list[dict[str, Any]]:
    why = "\n".join(f"• {escape(reason)}" for reason in proposal.why) or "• a person must approve this tool"
    # Pending, it has not happened; decided, the outcome line below says what becomes of it.
    summary = f"*{escape(_what(proposal, edits))}*" + ("" if decided else "\nNothing has happened yet.")
    blocks: list[dict[str, Any]] = [
        {"type": "section", "text": _mrkdwn(f"*{header}* ({escape(proposal.task)})")},
        {"type": "section", "text": _mrkdwn(summary)},
        {"type": "section", "text": _mrkdwn(f"Why a person is asked:\n{why}")},
    ]
    reason = proposal.unverified_reason.strip()
    if reason and reason != "-":
        text = f"The assistant's reason (unverified): {reason}"[:_MAX_TEXT]
        blocks.append({"type": "context", "elements": [{"type": "plain_text", "text": text, "emoji": False}]})
    who = ", ".join(f"<@{r.slack_user}>" if r.slack_user else escape(r.id) for r in reviewers) or "nobody"
    needed = requirement.reviewers_required if requirement else proposal.reviewers_required
    needs = f"{needed} different reviewers" if needed > 1 else "one reviewer"
    deadline = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(proposal.expires_at))
    blocks.append(_context(f"Needs {needs} · may decide: {who} · expires {deadline}", escaped=True))
    if requirement is not None:
        blocks.append(_context(f"Approval rule: {requirement.describe()}"))
    for version in sorted(edits, key=lambda v: v.n):  # what a reviewer changed: approvals count per version
        changes = ", ".join(f"{k} {shown(a)} → {shown(b)}" for k, (a, b) in sorted(version.changes.items()))
        blocks.append(
            _context(f"Edited by {version.editor} at {utc_time(version.at)} (version {version.n}): {changes}")
        )
    return blocks


def _button(
    label: str, action_id: str, proposal: Proposal, style: str | None, edits: Sequence[Version]
) -> dict[str, Any]:
    button: dict[str, Any] = {
        "type": "button",
        "action_id": action_id,
        "text": {"type": "plain_text", "text": label},
        "value": button_value(proposal, edits),
    }
    if style is not None:  # Slack refuses a style other than primary or danger: none is the default
        button["style"] = style
    if action_id == APPROVE_ACTION:  # a slip of the thumb should not approve a refund
        button["confirm"] = {
            "title": {"type": "plain_text", "text": "Approve?"},
            "text": {"type": "plain_text", "text": "It will run once, as shown above."},
            "confirm": {"type": "plain_text", "text": "Approve"},
            "deny": {"type": "plain_text", "text": "Cancel"},
        }
    return button


def _mrkdwn(text: str) -> dict[str, str]:
    return {"type": "mrkdwn", "text": text}


def _context(text: str, *, escaped: bool = False) -> dict[str, Any]:
    return {"type": "context", "elements": [_mrkdwn(text if escaped else escape(text))]}
