"""The pages a POST's decision answers with: what it recorded, naming the version that runs."""

from __future__ import annotations

from lockgate.approvals.decisions import SETTLED, DecisionOutcome, DecisionRecorder, State
from lockgate.approvals.pages import Page, outcome_page
from lockgate.approvals.proposals import Proposal
from lockgate.approvals.standing import Standing, summary_of

SETTLED_STATUS = {State.APPROVED: 409, State.REJECTED: 409, State.EXPIRED: 410}


def settled_page(state: State) -> Page:
    titles = {
        State.APPROVED: ("Already approved", "This action was approved; nothing more is needed."),
        State.REJECTED: ("Already rejected", "This action was rejected and will not happen."),
        State.EXPIRED: ("This request has expired", "Nobody decided in time; it will not happen."),
    }
    title, message = titles[state]
    return outcome_page(title, message, status=SETTLED_STATUS[state])


_OUTCOME_PAGES = {
    DecisionOutcome.ALREADY_DECIDED: ("You have already decided", "Your first decision stands.", 409),
    DecisionOutcome.EDITED: (
        "Changed since you looked",
        "Another reviewer edited this request after you opened it. Nothing was recorded: open your "
        "link again to see the latest version.",
        409,
    ),
}


def decision_page(
    outcome: DecisionOutcome, proposal: Proposal, standing: Standing, recorder: DecisionRecorder
) -> Page:
    """The page for what a POST's decision did, naming the version that runs (the CLI and Slack word
    the same outcomes their way)."""
    current = standing.current(proposal)
    summary = summary_of(proposal, current)
    edited = f" (as edited by {current.editor}; proposed: {proposal.summary})" if current.n else ""
    if outcome is DecisionOutcome.APPROVED:
        return outcome_page("Approved", f"{summary}{edited} — it will run once, within the hour.", status=200)
    if outcome is DecisionOutcome.REJECTED:
        return outcome_page("Rejected", f"{summary} — it will not happen.", status=200)
    if outcome is DecisionOutcome.AWAITING:
        requirement = recorder.requirement(proposal, standing)
        approvals = len(standing.approvers(proposal, recorder.allowed(proposal, standing)))
        return outcome_page(
            "Approval recorded",
            f"{summary}{edited}. It needs {requirement.describe()}: {approvals} of "
            f"{requirement.reviewers_required} so far. Another reviewer must also approve before it runs.",
            status=200,
        )
    settled = {o: s for s, o in SETTLED.items()}
    if outcome in settled:
        return settled_page(settled[outcome])
    title, message, status = _OUTCOME_PAGES[outcome]
    return outcome_page(title, message, status=status)
