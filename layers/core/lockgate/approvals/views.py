"""A stored proposal as the review page shows it, and the edit a page's form asks for."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from lockgate.approvals.edit_page import EditView, hint, shown
from lockgate.approvals.eligibility import eligible_reviewers, requirement_of
from lockgate.approvals.pages import EDIT_PREFIX
from lockgate.approvals.proposals import Proposal, answers_only
from lockgate.approvals.review_page import Decided, ProposalView
from lockgate.approvals.standing import Standing, summary_of
from lockgate.approvals.versions import editable
from lockgate.config import ApprovalsConfig


def proposal_view(
    proposal: Proposal, standing: Standing, config: ApprovalsConfig, now: float
) -> ProposalView:
    """What a reviewer sees: the current version (its summary, arguments and the rule that applies to
    it), its edits, who may decide it now and who decided what."""
    current = standing.current(proposal)
    requirement = requirement_of(config, proposal, current)
    details = [(key.replace("_", " "), _value(value)) for key, value in current.args.items()]
    after = proposal.extra.get("after")
    after = after if isinstance(after, dict) else {}
    return ProposalView(
        approval_id=proposal.approval_id,
        task=proposal.task,
        tool=proposal.tool,
        summary=summary_of(proposal, current),
        proposed_summary=proposal.summary if current.n else "",
        rule=requirement.describe(),
        details=details,
        unverified_reason=proposal.unverified_reason,
        why_asked=list(proposal.why),
        expires_at=proposal.expires_at,
        created_at=proposal.created_at,
        reviewers_required=requirement.reviewers_required,
        decisions=[
            Decided(d.reviewer, d.verdict.value, d.decided_at, d.reason, d.version)
            for d in standing.decisions
        ],
        facts=list(proposal.facts),
        reviewers=[(r.id, r.name or r.id) for r in eligible_reviewers(config, proposal, current)],
        run_within_seconds=proposal.run_within_seconds,
        after_approve=str(after.get("approve", "")),
        after_reject=str(after.get("reject", "")),
        answers_only=answers_only(proposal),
        veto_until=veto if isinstance(veto := proposal.extra.get("veto_until"), int) else None,
        version=current.n,
        seen=current.fingerprint,
        edits=[
            EditView(
                v.n, v.editor, v.at, [(k, shown(a), shown(b)) for k, (a, b) in sorted(v.changes.items())]
            )
            for v in standing.versions
        ],
        editable=[
            (name, shown(current.args.get(name, "")), hint(schema))
            for name, schema in sorted(editable(proposal).items())
        ],
    )


def form_edit(form: Mapping[str, str], proposal: Proposal, standing: Standing) -> dict[str, str]:
    """The fields the form changed (``edit.<field>``), against the current version's values."""
    current = standing.current(proposal).args
    return {
        name[len(EDIT_PREFIX) :]: value
        for name, value in form.items()
        if name.startswith(EDIT_PREFIX) and value != shown(current.get(name[len(EDIT_PREFIX) :], ""))
    }


def _value(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)
