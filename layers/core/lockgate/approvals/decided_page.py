"""What a decided (or expired) link shows: the version that ran, its rule, who decided, what became of it."""

from __future__ import annotations

from lockgate.approvals.decisions import State
from lockgate.approvals.edit_page import edits_section
from lockgate.approvals.outcome import ActionOutcome, ActionState
from lockgate.approvals.pages import Page, document, esc, utc_time
from lockgate.approvals.review_page import ProposalView, decisions_list, proposed_line, rule_line

_DECIDED_TITLES = {
    State.APPROVED: "Already approved",
    State.REJECTED: "Already rejected",
    State.EXPIRED: "This request has expired",
}


def decided_page(view: ProposalView, state: State, outcome: ActionOutcome | None, *, status: int) -> Page:
    """A decided (or expired) link: who decided and when, with their reasons, and what became of it."""
    title = _DECIDED_TITLES[state]
    body = f"""
<h1>{esc(title)}</h1>
<p><strong>{esc(view.summary)}</strong></p>
{proposed_line(view)}
{rule_line(view)}
<p class=meta>Task {esc(view.task)} · tool {esc(view.tool)} · request {esc(view.approval_id)}
· asked {utc_time(view.created_at)}</p>
{edits_section(view.edits)}
<h2>Who decided</h2>
{decisions_list(view.decisions) or "<p>Nobody decided in time.</p>"}
<h2>What happened</h2>
<p class=outcome>{esc(_outcome_text(view, state, outcome))}</p>
"""
    return Page(status, document(title, body))


def _outcome_text(view: ProposalView, state: State, outcome: ActionOutcome | None) -> str:
    if view.answers_only:
        return "The answer is recorded; nothing runs."
    if state is not State.APPROVED:
        return "Nothing ran, and nothing will."
    if outcome is None and view.version:
        return (
            "A reviewer's edit was approved; what became of the edited call is in "
            "`lockgate approvals show` and the run's record."
        )
    if outcome is None:
        return "What became of it is not recorded on this request."
    at = f" at {utc_time(outcome.at)}" if outcome.at else ""
    since = utc_time(outcome.at) if outcome.at else "recently"
    return {
        ActionState.RAN: f"It ran{at}.",
        ActionState.FAILED: f"It was tried{at} and failed; it will not be tried again.",
        ActionState.WAITING: (
            f"Waiting for reconciliation (since {since}): it may or may not have happened, "
            "so it is not retried; a scheduled check or a person settles it."
        ),
        ActionState.RUNNING: f"It is running now (since {since}).",
        ActionState.NOT_RUN: "Not run yet: it runs once, soon after the last approval, or not at all.",
    }[outcome.state]
