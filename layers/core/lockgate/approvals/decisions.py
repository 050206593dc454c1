"""A reviewer's decision: the stored record, the proposal's state from its decisions, and the rules
every decision follows (a link's POST and `lockgate approvals approve` share them).

Only a pending, unexpired, unchanged proposal takes a decision; only a reviewer allowed for its
tool may give one; each reviewer decides each version once, and every decision is one revision of
the proposal's standing (``lockgate.approvals.standing``). A reviewer may approve an edited
version instead (``lockgate.approvals.versions``). A decision that settles the proposal becomes an
inbox event, and the worker re-checks everything before acting on it.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum

from lockgate import tracing
from lockgate.actions.tools import fingerprint
from lockgate.approvals.checking import CheckUnavailable, CheckVersion
from lockgate.approvals.eligibility import (
    allowed_ids,
    current_state,
    eligible_reviewers,
    requirement_of,
    state_of,
)
from lockgate.approvals.events import approval_event, enqueue
from lockgate.approvals.proposals import Proposal
from lockgate.approvals.standing import (
    MAX_RACES,
    Choice,
    Current,
    DecisionRecord,
    DecisionStore,
    Standing,
    State,
)
from lockgate.approvals.versions import EditRefused, EditUnchecked, Version, apply_edit, new_version
from lockgate.clock import Clock
from lockgate.config import ApprovalsConfig, Reviewer
from lockgate.config.rules import Requirement
from lockgate.errors import StoreUnavailable
from lockgate.inbox.queue import InboxQueue
from lockgate.inbox.store import InboxStore
from lockgate.telemetry import Log, Metrics

__all__ = [
    "MAX_REASON_CHARS",
    "SETTLED",
    "Choice",
    "DecisionOutcome",
    "DecisionRecord",
    "DecisionRecorder",
    "DecisionStore",
    "State",
    "checked_reason",
    "current_state",
    "state_of",
]

MAX_REASON_CHARS = 500  # a reviewer's optional reason for rejecting, shown to the others


def checked_reason(text: str) -> str | None:
    """A reviewer's reason, trimmed, with control characters removed; None if it is too long."""
    kept = "".join(c for c in text.replace("\r\n", "\n") if c == "\n" or c.isprintable()).strip()
    return kept if len(kept) <= MAX_REASON_CHARS else None


class DecisionOutcome(StrEnum):
    """What recording one reviewer's decision did; the page, Slack and the CLI each word it their way."""

    APPROVED = "approved"  # this decision settled it: it will run once
    REJECTED = "rejected"  # this decision settled it: it will not happen
    AWAITING = "awaiting another reviewer"  # recorded; another reviewer must also approve
    ALREADY_DECIDED = "already decided"  # this reviewer decided before; the first decision stands
    ALREADY_APPROVED = "already approved"
    ALREADY_REJECTED = "already rejected"
    EXPIRED = "expired"
    CHANGED = "changed"  # the stored arguments no longer match their fingerprint
    EDITED = "edited since you looked"  # a reviewer edited it after this one saw it: look again
    NOT_ALLOWED = "not allowed"  # not a reviewer for this tool

    @property
    def recorded(self) -> bool:
        """Whether a decision row was written."""
        return self in (DecisionOutcome.APPROVED, DecisionOutcome.REJECTED, DecisionOutcome.AWAITING)


SETTLED = {
    State.APPROVED: DecisionOutcome.ALREADY_APPROVED,
    State.REJECTED: DecisionOutcome.ALREADY_REJECTED,
    State.EXPIRED: DecisionOutcome.EXPIRED,
}


class DecisionRecorder:
    """The rules every decision follows, from a link's POST, a Slack click or the CLI.

    A decision is read, judged and written as one revision of the proposal's standing
    (``DecisionStore.settle``): if another decision was written in between, it is read and
    judged again, so exactly one outcome is possible however decisions race.
    """

    def __init__(
        self,
        *,
        decisions: DecisionStore,
        config: ApprovalsConfig,
        inbox: InboxStore,
        queue: InboxQueue,
        clock: Clock,
        log: Log,
        metrics: Metrics,
        checks: CheckVersion | None = None,
    ) -> None:
        self._checks = checks  # the worker's check of an edited version; None: edits are refused
        self._decisions = decisions
        self._config = config
        self._inbox = inbox
        self._queue = queue
        self._clock = clock
        self._log = log
        self._metrics = metrics

    def reviewer(
        self, proposal: Proposal, reviewer_id: str, standing: Standing | None = None
    ) -> Reviewer | None:
        """The configured reviewer with this id if they may decide the proposal's current version now
        (``standing``: as read already; None reads it), else None."""
        standing = standing if standing is not None else self._decisions.standing(proposal.approval_id)
        current = standing.current(proposal)
        eligible = eligible_reviewers(self._config, proposal, current)
        return next((r for r in eligible if r.id == reviewer_id), None)

    def allowed(self, proposal: Proposal, standing: Standing) -> frozenset[str]:
        """The ids of the reviewers who may decide the current version now."""
        return allowed_ids(self._config, proposal, standing)

    def requirement(self, proposal: Proposal, standing: Standing) -> Requirement:
        """What the current version needs, and which rules said so."""
        return requirement_of(self._config, proposal, standing.current(proposal))

    def state(self, proposal: Proposal, standing: Standing) -> State:
        """The proposal's state now, counting only reviewers allowed for its tool."""
        return current_state(self._config, proposal, standing, self._clock.now())

    def record(  # noqa: PLR0913 - one decision's parts, each optional but the first four
        self,
        proposal: Proposal,
        reviewer_id: str,
        verdict: Choice,
        via: str,
        *,
        reason: str = "",
        seen: str | None = None,
        edit: Mapping[str, str] | None = None,
    ) -> DecisionOutcome:
        """One decision on a pending, unexpired, unchanged proposal; a settling one enqueues the event.

        ``reason`` (rejections only; callers check it with ``checked_reason`` first): ValueError if
        too long. ``seen``: the fingerprint of the version the reviewer was shown; if it has been
        edited since, nothing is written (EDITED). ``edit`` (approvals only): field -> new value;
        the edited arguments become a new version that this decision approves (``EditRefused``
        says why an edit is not allowed or not valid).
        """
        kept = checked_reason(reason) if verdict is Choice.REJECT else ""
        if kept is None:
            raise ValueError(f"a reason is at most {MAX_REASON_CHARS} characters")
        if edit is not None and verdict is not Choice.APPROVE:
            raise ValueError("an edit is approved by its editor: it cannot be a rejection")
        attributes = {
            "lockgate.approval.id": proposal.approval_id,
            "lockgate.approval.reviewer": reviewer_id,
            "lockgate.approval.verdict": verdict.value,
            "lockgate.approval.via": via,
            "lockgate.approval.edited": edit is not None,
        }
        # Hours after the proposal, maybe: the decision joins the proposal's trace, linked to its request.
        with tracing.span("approval decision", parent=proposal.extra.get("trace"), attributes=attributes):
            outcome = self._record(proposal, reviewer_id, verdict, via, kept, seen, edit)
            tracing.annotate({"lockgate.approval.outcome": outcome.value})
            return outcome

    def _record(  # noqa: PLR0913 - record's checked parts
        self,
        proposal: Proposal,
        reviewer_id: str,
        verdict: Choice,
        via: str,
        kept: str,
        seen: str | None,
        edit: Mapping[str, str] | None,
    ) -> DecisionOutcome:
        if fingerprint(proposal.args) != proposal.fingerprint:
            return DecisionOutcome.CHANGED
        for _ in range(MAX_RACES):
            now = int(self._clock.now())
            standing = self._decisions.standing(proposal.approval_id)
            judged = self.judge(proposal, standing, reviewer_id, seen)
            if judged is not None:
                return judged
            current = standing.current(proposal)
            version = self._edited(proposal, current, edit, reviewer_id, now) if edit is not None else None
            record = DecisionRecord(
                proposal.approval_id,
                reviewer_id,
                verdict,
                now,
                version.fingerprint if version else current.fingerprint,
                via,
                kept,
                version.n if version else current.n,
            )
            after = standing.with_decision(record, version)
            state = self.state(proposal, after)
            if self._decisions.settle(record, standing.revision, state, version):
                return self._recorded(proposal, record, state, version)
        raise StoreUnavailable("too many decisions at once on one proposal")

    def judge(
        self, proposal: Proposal, standing: Standing, reviewer_id: str, seen: str | None
    ) -> DecisionOutcome | None:
        """Why this reviewer's decision on the version ``seen`` cannot be written now, or None if it can."""
        state = self.state(proposal, standing)
        if state is not State.PENDING:
            return SETTLED[state]
        if self.reviewer(proposal, reviewer_id, standing) is None:
            return DecisionOutcome.NOT_ALLOWED
        current = standing.current(proposal)
        if seen is not None and seen != current.fingerprint:
            return DecisionOutcome.EDITED
        if standing.decided(reviewer_id, current.n):
            return DecisionOutcome.ALREADY_DECIDED
        return None

    def _edited(
        self, proposal: Proposal, current: Current, edit: Mapping[str, str], editor: str, now: int
    ) -> Version:
        """The edited version, checked by the worker as it would run it; EditRefused says why not.

        Its requirement is the worker's (the tool's hook included) and never less than the file's
        rules read here; its editor must be one who may approve it.
        """
        edited = apply_edit(proposal, current.args, edit)
        if self._checks is None:
            raise EditRefused("edits cannot be checked here (no worker to ask): approve or reject it")
        try:
            check = self._checks.check(proposal.approval_id, edited)
        except CheckUnavailable as exc:
            raise EditUnchecked(
                "the edit could not be checked right now (the agent worker did not answer); try again in a "
                "minute"
            ) from exc
        if check.refusal or check.requirement is None:
            raise EditRefused(f"it would not run: {check.refusal or 'the check gave no requirement'}")
        section = self._config.for_tool(proposal.tool)
        requirement = check.requirement.stricter(section.requirement(edited))
        version = new_version(
            current.n + 1, current.args, edited, editor, now, check.summary, requirement, check.op_key
        )
        as_edited = Current(
            version.n, version.args, version.fingerprint, editor, version.summary, requirement
        )
        if editor not in {r.id for r in eligible_reviewers(self._config, proposal, as_edited)}:
            raise EditRefused(f"as edited it needs {requirement.describe()}; {editor} may not approve it")
        return version

    def _recorded(
        self, proposal: Proposal, record: DecisionRecord, state: State, version: Version | None
    ) -> DecisionOutcome:
        """Count, log and (if it settled the proposal) enqueue a written decision."""
        self._metrics.add_metric(name=f"Approval_{record.verdict.value}", unit="Count", value=1)
        if version is not None:
            self._metrics.add_metric(name="ApprovalEdited", unit="Count", value=1)
        self._log.info(
            "approval decided",
            extra={
                "approval": proposal.approval_id,
                "reviewer": record.reviewer,
                "decision": record.verdict.value,
                "via": record.via,
                "version": record.version,
                "edited_fields": sorted(version.changes) if version else [],
                "reason_chars": len(record.reason),  # never the words: they can quote anything
            },
        )
        if state is State.APPROVED:
            self._enqueue(proposal, state, record.decided_at)
            return DecisionOutcome.APPROVED
        if state is State.REJECTED:
            self._enqueue(proposal, state, record.decided_at)
            return DecisionOutcome.REJECTED
        return DecisionOutcome.AWAITING

    def _enqueue(self, proposal: Proposal, state: State, now: int) -> None:
        """The decision becomes an inbox event; the worker re-checks everything before acting."""
        # Untraced here (a CLI with no SDK): the run still joins the proposal's trace.
        carried = tracing.traceparent() or proposal.extra.get("trace")
        event = approval_event(proposal.approval_id, state.value, now, trace=carried)
        enqueue(self._inbox, self._queue, event, self._log)
