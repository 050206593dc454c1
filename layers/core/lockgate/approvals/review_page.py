"""The page a reviewer decides on, and the page a decided link shows. Plain HTML, every value escaped.

Built only from the stored proposal (its facts were captured when it was made), its decisions and,
once decided, the action's outcome from the ledger. Nothing here decides anything.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import parse_qsl

from lockgate.actions.facts import Fact
from lockgate.approvals.decisions import MAX_REASON_CHARS
from lockgate.approvals.edit_page import EditView, edit_fields, edits_section
from lockgate.approvals.pages import (
    DECISION_FIELD,
    FORM_TOKEN_FIELD,
    LINK_FIELDS,
    REASON_FIELD,
    SEEN_FIELD,
    Page,
    document,
    esc,
    hidden_field,
    time_left,
    utc_time,
)

UNVERIFIED_LABEL = "The assistant's reason (unverified — written by the AI, not checked):"
UNVERIFIED_FACT = "UNVERIFIED — someone else's words, not checked. Do not follow instructions in it."
# A value this long, or on several lines, is shown whole in a <pre> block (e.g. an email body).
_INLINE_MAX_CHARS = 80


@dataclass(frozen=True)
class Decided:
    """One reviewer's decision as a page shows it."""

    who: str
    verdict: str
    at: int
    reason: str = ""
    version: int = 0  # which version it was about (0: as proposed)


@dataclass(frozen=True)
class ProposalView:
    """What a reviewer sees of a stored proposal; every field is shown escaped."""

    approval_id: str
    task: str
    tool: str
    summary: str
    details: list[tuple[str, str]]
    unverified_reason: str
    why_asked: list[str]
    expires_at: int
    created_at: int
    reviewers_required: int
    decisions: list[Decided]
    facts: list[Fact] = field(default_factory=list)  # none on proposals made before facts were kept
    reviewers: list[tuple[str, str]] = field(default_factory=list)  # (id, name) of who may decide
    run_within_seconds: int = 3_600
    after_approve: str = ""
    after_reject: str = ""
    answers_only: bool = False  # "did this happen?": the answer is recorded, nothing runs
    veto_until: int | None = None  # a "veto" proposal runs then unless someone rejects it
    version: int = 0  # the current version (0: as proposed; n: the nth reviewer's edit)
    seen: str = ""  # the current version's fingerprint: the form's decision counts for it only
    edits: list[EditView] = field(default_factory=list)
    editable: list[tuple[str, str, str]] = field(default_factory=list)  # (field, current value, hint)
    proposed_summary: str = ""  # the proposal's own summary when the current version is an edit
    rule: str = ""  # which approval rule applies to the current version, and what it asks

    def current_decisions(self) -> list[Decided]:
        """The decisions that count now: every rejection, and approvals of the current version."""
        return [d for d in self.decisions if d.verdict != "approve" or d.version == self.version]


def confirmation_page(
    view: ProposalView, reviewer: str, form_action: str, form_token: str, query: str, now: int
) -> Page:
    """The GET page: what would happen, why, the facts, who decides, and an Approve / Reject form."""
    mine = [d for d in view.current_decisions() if d.who == reviewer]
    if mine:
        action = (
            f"<p class=note>You already decided: <strong>{esc(mine[-1].verdict)}</strong> at "
            f"{utc_time(mine[-1].at)}. Each reviewer decides once.</p>"
        )
    elif now > view.expires_at:
        action = "<p class=note>This request has expired. It can no longer be approved.</p>"
    else:
        action = _after_buttons(view) + _form(view, form_action, form_token, query)
    body = f"""
<p class=warn><strong>Nothing has happened yet.</strong> Opening this link changed nothing.
It runs only if it is approved on this page.</p>
<h1>{esc(view.summary)}</h1>
{proposed_line(view)}
<p class=meta>Task {esc(view.task)} · tool {esc(view.tool)} · request {esc(view.approval_id)}
· asked {utc_time(view.created_at)}</p>
<h2>Why you are asked</h2>
{_list(view.why_asked)}
{_facts(view.facts)}
{edits_section(view.edits)}
<h2>What exactly would happen</h2>
<p class=meta>{_checked_note(view)}</p>
{_details(view.details)}
<h2>{esc(UNVERIFIED_LABEL)}</h2>
<blockquote class=unverified>{esc(view.unverified_reason) or "<em>(no reason given)</em>"}</blockquote>
<h2>Decision</h2>
<p>Expires {utc_time(view.expires_at)} ({esc(time_left(view.expires_at, now))}).</p>
{_progress(view, reviewer)}
<p>Deciding as <strong>{esc(reviewer)}</strong>.</p>
{action}
"""
    return Page(200, document(view.summary, body))


def _checked_note(view: ProposalView) -> str:
    if view.version:
        return (
            "The latest version's arguments. A reviewer's changes are checked against our own records "
            "and the tool's rules again before anything runs; if they fail, nothing runs."
        )
    return (
        "The assistant's arguments. Amounts, orders and recipients were checked against our own "
        "records; free text (such as a reason) was written by the AI and was not."
    )


def _form(view: ProposalView, form_action: str, form_token: str, query: str) -> str:
    link = {key: value for key, value in parse_qsl(query, keep_blank_values=True) if key in LINK_FIELDS}
    hidden = "".join(hidden_field(name, link.get(name, "")) for name in LINK_FIELDS)
    hidden += hidden_field(SEEN_FIELD, view.seen)
    # Reject first and the same size as Approve; no autofocus, so neither is the default.
    return f"""<form method=post action="{esc(form_action)}">
{hidden}{hidden_field(FORM_TOKEN_FIELD, form_token)}
<label for=reason>Reason for rejecting (optional, at most {MAX_REASON_CHARS} characters; the other
reviewers see it)</label>
<textarea id=reason name={REASON_FIELD} maxlength={MAX_REASON_CHARS} rows=3></textarea>
<div class=buttons>
<button type=submit name={DECISION_FIELD} value=reject class=reject>Reject</button>
<button type=submit name={DECISION_FIELD} value=approve class=approve>Approve</button>
</div>
{edit_fields(view.editable)}
</form>"""


def _after_buttons(view: ProposalView) -> str:
    """What each button does, true to the executor: runs once within the window, or nothing runs."""
    if view.answers_only:
        approve = "records that it happened"
        reject = "records that it did not. Nothing runs either way"
    else:
        hours = max(1, view.run_within_seconds // 3_600)
        needed = view.reviewers_required
        approve = (
            f"counts as one of the {needed} approvals needed; once {needed} reviewers approve, it"
            if needed > 1
            else "it"
        )
        approve += (
            f" runs once, after the rules are checked again, within {hours} hour{'s' if hours > 1 else ''}"
            " of the last approval or not at all" + (f"; {view.after_approve}" if view.after_approve else "")
        )
        if view.veto_until:  # the executor runs it when the window closes with nobody rejecting it
            approve += f". If nobody rejects it, it runs anyway after {utc_time(view.veto_until)}"
        reject = "nothing runs, and one rejection is final" + (
            f"; {view.after_reject}" if view.after_reject else ""
        )
    return (
        f"<ul class=after><li><strong>Approve</strong>: {esc(approve)}.</li>"
        f"<li><strong>Reject</strong>: {esc(reject)}.</li></ul>\n"
    )


def _facts(facts: list[Fact]) -> str:
    if not facts:
        return "<h2>The facts</h2>\n<p><em>No facts were recorded with this request.</em></p>"
    ours = [(f.label, f.value) for f in facts if f.verified]
    theirs = "".join(
        f"<h3>{esc(f.label)}</h3>\n<p class=flag>{esc(UNVERIFIED_FACT)}</p>\n"
        f"<pre class=unverified>{esc(f.value)}</pre>\n"
        for f in facts
        if not f.verified
    )
    checked = (
        "<p class=meta>From our own systems, read when this was proposed.</p>\n" + _details(ours)
        if ours
        else ""
    )
    return f"<h2>The facts</h2>\n{checked}\n{theirs}"


def _details(details: list[tuple[str, str]]) -> str:
    if not details:
        return "<p><em>(no details)</em></p>"
    rows = []
    for label, value in details:
        text = str(value)
        shown = (
            f"<pre>{esc(text)}</pre>"
            if "\n" in text or len(text) > _INLINE_MAX_CHARS
            else f"<span class=value>{esc(text)}</span>"
        )
        rows.append(f"<dt>{esc(label)}</dt><dd>{shown}</dd>")
    return "<dl>" + "\n".join(rows) + "</dl>"


def _list(items: list[str]) -> str:
    if not items:
        return "<p><em>(no reason recorded)</em></p>"
    return "<ul>" + "".join(f"<li>{esc(item)}</li>" for item in items) + "</ul>"


def decisions_list(decisions: list[Decided]) -> str:
    """Who decided what and when, with a rejection's reason in their words (escaped)."""
    lines = [
        f"<li>{esc(d.who)}: <strong>{esc(d.verdict)}</strong>"
        + (f" (version {d.version})" if d.version else "")
        + f" at {utc_time(d.at)}"
        + (f"<blockquote class=reason>{esc(d.reason)}</blockquote>" if d.reason else "")
        + "</li>"
        for d in decisions
    ]
    return f"<ul>{''.join(lines)}</ul>" if lines else ""


def proposed_line(view: ProposalView) -> str:
    """For an edited request: what the assistant proposed, above what will run."""
    if not view.proposed_summary:
        return ""
    return (
        f"<p class=meta>This is version {view.version}, changed by a reviewer; the assistant proposed: "
        f"{esc(view.proposed_summary)}</p>\n"
    )


def rule_line(view: ProposalView) -> str:
    """Which approval rule applies to this version, and what it asks."""
    return f"<p class=rule>Approval rule: {esc(view.rule)}.</p>\n" if view.rule else ""


def _progress(view: ProposalView, reviewer: str) -> str:
    approvals = len({d.who for d in view.current_decisions() if d.verdict == "approve"})
    count = (
        f"<p>{approvals} of {view.reviewers_required} approvals so far.</p>"
        if view.reviewers_required > 1
        else "<p>One approval is needed.</p>"
    )
    names = [f"{name} (you)" if rid == reviewer else name for rid, name in view.reviewers]
    who = f"<p>Who may decide: {esc(', '.join(names))}.</p>" if names else ""
    decided = decisions_list(view.decisions)
    already = f"<p>Already decided:</p>{decided}" if decided else "<p>No one has decided yet.</p>"
    return f"{rule_line(view)}{count}\n{who}\n{already}"
