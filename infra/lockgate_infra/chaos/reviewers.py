"""The reviewers of a chaos run: each opens their signed link to every proposal they may decide,
and approves, rejects, or approves with changes ("edit") through the approval desk's own pages.

An action is approved or rejected at random (and edited, when the run gives reviewers an
``Edits`` policy); a "did this happen?" question is answered truthfully, from the downstream
systems' own records. A choice, once made, is kept: a reviewer whose click failed (a fault)
clicks the same way next round. An edit the desk refuses (it would break a rule) records nothing,
and the reviewer then approves or rejects the proposal as it stands.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlsplit

from lockgate.approvals.desk import EDIT_CHOICE
from lockgate.approvals.pages import EDIT_PREFIX, FORM_TOKEN_FIELD, SEEN_FIELD, Page
from lockgate.approvals.proposals import RESOLVE_TOOL, Proposal
from lockgate.approvals.versions import EditRefused

if TYPE_CHECKING:
    from lockgate_infra.chaos.faults import FaultPlan
    from lockgate_infra.chaos.world import World

# A reviewer's changes to a proposal ({field: the value typed into the form}), or None to decide it as is.
Edits = Callable[[Proposal, random.Random], Mapping[str, str] | None]
Guard = Callable[[str, Callable[[], Any]], None]  # runs one invocation, counting what it let out


@dataclass
class Choices:
    """What the reviewers chose, per proposal."""

    decided: dict[str, str] = field(default_factory=dict)  # approval id -> approve | reject | edit
    edits: dict[str, Mapping[str, str]] = field(default_factory=dict)  # approval id -> the changes
    edits_refused: int = 0  # edits the desk refused (nothing recorded; decided as is afterwards)


def review(  # noqa: PLR0913 - the run, and how its reviewers behave
    world: World,
    plan: FaultPlan,
    choices: Choices,
    guard: Guard,
    approve_rate: float,
    edits: Edits | None = None,
) -> None:
    """Every reviewer allowed to decide a pending proposal opens their link and decides it."""
    from lockgate_infra.chaos.housekeeping import happened  # the jobs import the world's modules

    for status in world.review.listing():
        proposal = status.proposal
        if proposal.tool == RESOLVE_TOOL:
            decision = "approve" if happened(world, proposal) else "reject"
        else:
            decision = _choice(plan, choices, proposal, approve_rate, edits)
        changes = choices.edits.get(proposal.approval_id, {}) if decision == EDIT_CHOICE else {}
        for link in world.desk.links_for(proposal).values():
            query = dict(parse_qsl(urlsplit(link).query))
            with plan.active():
                guard("approval", partial(_decide, world, choices, proposal, query, decision, changes))


def _choice(
    plan: FaultPlan, choices: Choices, proposal: Proposal, approve_rate: float, edits: Edits | None
) -> str:
    known = choices.decided.get(proposal.approval_id)
    if known is not None:
        return known
    decision = "approve" if plan.rng.random() < approve_rate else "reject"
    changes = edits(proposal, plan.rng) if edits is not None and decision == "approve" else None
    if changes:
        decision = EDIT_CHOICE
        choices.edits[proposal.approval_id] = dict(changes)
    choices.decided[proposal.approval_id] = decision
    return decision


def _decide(  # noqa: PLR0913 - one click: who, on what, and how
    world: World,
    choices: Choices,
    proposal: Proposal,
    query: dict[str, str],
    decision: str,
    changes: Mapping[str, str],
) -> None:
    approval_id = proposal.approval_id
    page = world.desk.show(approval_id, query)
    if page.status != 200:
        return  # already decided, settled, or the callback failed: the reviewer tries again later
    form = {**query, FORM_TOKEN_FIELD: _field(page, FORM_TOKEN_FIELD), "decision": decision}
    if decision == EDIT_CHOICE:
        form[SEEN_FIELD] = _field(page, SEEN_FIELD)
        form.update({EDIT_PREFIX + name: value for name, value in changes.items()})
    answer = world.desk.decide(approval_id, query, form)
    if decision == EDIT_CHOICE and answer.status == EditRefused.status:
        # The change would break a rule: nothing was recorded. Approve the proposal as it stands.
        choices.edits_refused += 1
        choices.decided[approval_id] = "approve"


def _field(page: Page, name: str) -> str:
    marker = f'name="{name}" value="'
    return page.body.split(marker, 1)[1].split('"', 1)[0] if marker in page.body else ""
