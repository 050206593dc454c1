"""An edit becomes a version only once the worker would run it: checked here, before anything is written.

``lockgate.approvals.versions`` checks the typed values against the field's recorded schema; then
the worker is asked (``lockgate.approvals.checking``) whether the whole edited call would run. Its
answer gives the version its summary, requirement and ledger key; the requirement is never less
than the file's rules read here, and the editor must be one who may approve what they made.
"""

from __future__ import annotations

from collections.abc import Mapping

from lockgate.approvals.checking import CheckUnavailable, CheckVersion
from lockgate.approvals.eligibility import eligible_reviewers
from lockgate.approvals.proposals import Proposal
from lockgate.approvals.standing import Current
from lockgate.approvals.versions import EditRefused, EditUnchecked, Version, apply_edit, new_version
from lockgate.config import ApprovalsConfig


def checked_version(  # noqa: PLR0913 - the edit, what it edits, and who is asked about it
    config: ApprovalsConfig,
    checks: CheckVersion | None,
    proposal: Proposal,
    current: Current,
    edit: Mapping[str, str],
    editor: str,
    now: int,
) -> Version:
    """The edited version of ``current``, checked as the worker would run it; EditRefused says why not."""
    edited = apply_edit(proposal, current.args, edit)
    if checks is None:
        raise EditRefused("edits cannot be checked here (no worker to ask): approve or reject it")
    try:
        check = checks.check(proposal.approval_id, edited)
    except CheckUnavailable as exc:
        raise EditUnchecked(
            "the edit could not be checked right now (the agent worker did not answer); try again in a minute"
        ) from exc
    if check.refusal or check.requirement is None:
        raise EditRefused(f"it would not run: {check.refusal or 'the check gave no requirement'}")
    requirement = check.requirement.stricter(config.for_tool(proposal.tool).requirement(edited))
    version = new_version(
        current.n + 1, current.args, edited, editor, now, check.summary, requirement, check.op_key
    )
    as_edited = Current(version.n, version.args, version.fingerprint, editor, version.summary, requirement)
    if editor not in {r.id for r in eligible_reviewers(config, proposal, as_edited)}:
        raise EditRefused(f"as edited it needs {requirement.describe()}; {editor} may not approve it")
    return version
