"""Executing a decided proposal, in the worker: re-check everything, then run once through the ledger.

A decision arrives as an inbox event (``approval#<id>#approved|rejected``). Nothing about it is
trusted: the worker re-reads the proposal and the decisions (which its role may read but never
write), takes the current version (a reviewer may have edited the arguments), recomputes its
fingerprint, checks the run window, the tool's schema and its hard policies against current facts,
and only then executes through the operation ledger under the same key the agent loop would have
used, so an action runs at most once however many events arrive. An edit can never do what the
agent could not: it passes the same checks, here, before anything runs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from lockgate import tracing
from lockgate.actions.ledger import Ledger, LedgerConflict, OpState
from lockgate.actions.once import operation_key_for, run_once, traced
from lockgate.actions.tools import ToolArgumentsInvalid, fingerprint
from lockgate.agent.tasks import Task
from lockgate.approvals.eligibility import allowed_ids, approvers_suffice, current_state
from lockgate.approvals.limits import PendingLimits
from lockgate.approvals.proposals import Proposal, ProposalStore, answers_only
from lockgate.approvals.standing import Choice, Current, DecisionStore, Standing, State
from lockgate.approvals.telling import Teller
from lockgate.approvals.version_checks import Examined, Refusal, Unfit, VersionChecks
from lockgate.clock import Clock
from lockgate.config import ApprovalsConfig
from lockgate.errors import BadDelivery, Deferred, StoreUnavailable
from lockgate.inbox.queue import InboxQueue
from lockgate.inbox.routing import InboxEvent, TaskContext
from lockgate.inbox.store import InboxStore
from lockgate.telemetry import Log, Metrics

# The reconcile-operations job runs every 15 minutes: look again a little after it.
UNSETTLED_RETRY = 16 * 60

EXPIRED_EVENT = "expired"  # sent by the expire-approvals job; never runs anything
VETO_PASSED = "veto window passed"  # who "approved" a reversible action nobody vetoed in time


class ApprovalExecutor:
    """The worker's handler for ``approval`` inbox events."""

    def __init__(  # noqa: PLR0913 - the executor's collaborators, injected
        self,
        *,
        proposals: ProposalStore,
        decisions: DecisionStore,
        tasks: Mapping[str, Task],
        ledger: Ledger,
        config: ApprovalsConfig,
        clock: Clock,
        log: Log,
        metrics: Metrics,
        limits: PendingLimits | None = None,
        inbox: InboxStore | None = None,
        queue: InboxQueue | None = None,
    ) -> None:
        self._limits = limits  # a settled proposal gives back its places (one per target, caps)
        self._proposals = proposals
        self._decisions = decisions
        self._tasks = tasks
        self._ledger = ledger
        self._config = config
        self._clock = clock
        self._log = log
        self._metrics = metrics
        # inbox and queue: tasks with ``respond`` hear rejections and edits in their run
        self._teller = Teller(ledger, clock, log, inbox, queue)

    def __call__(self, event: InboxEvent, context: TaskContext) -> str:
        """Run an approved action once, or record why it will not run."""
        data = event.json()
        approval_id = data.get("approval_id") if isinstance(data, dict) else None
        proposal = self._proposals.get(approval_id) if isinstance(approval_id, str) else None
        if proposal is None:
            raise BadDelivery("approval event for an unknown proposal")
        if answers_only(proposal):
            return self._not_run(proposal.approval_id, "an answer about an operation: reconcile applies it")
        standing = self._decisions.standing(proposal.approval_id)
        now = self._clock.now()
        allowed = allowed_ids(self._config, proposal, standing)
        state = current_state(self._config, proposal, standing, now)
        task = self._tasks.get(proposal.task)
        if data.get("state") == EXPIRED_EVENT:
            return self._expire(task, proposal, state, standing, now)
        if state is State.REJECTED:
            return self._rejected(task, proposal, standing, allowed)
        veto_until = proposal.extra.get("veto_until")
        if state is State.PENDING and isinstance(veto_until, int):
            if now < veto_until:  # early (clock skew, a redelivery): come back when the window closes
                raise Deferred("veto window still open", delay_seconds=int(veto_until - now) + 1)
            # A reversible action whose veto window closed with nobody rejecting it.
            run = self._run(task, proposal, standing.current(proposal), [VETO_PASSED], veto_until)
            return self._settled(proposal, run)
        if state is not State.APPROVED:
            if state is State.EXPIRED:
                self._teller.expired(task, proposal, "nobody decided in time")
                self._release(proposal)
            return self._not_run(proposal.approval_id, f"not approved ({state.value})")
        approved = standing.approved_at(proposal, allowed)
        if now > approved + proposal.run_within_seconds:
            self._release(proposal)
            return self._not_run(proposal.approval_id, "approved too long ago: the run window has passed")
        current = standing.current(proposal)
        return self._settled(
            proposal, self._run(task, proposal, current, standing.approvers(proposal, allowed), approved)
        )

    def _rejected(
        self, task: Task | None, proposal: Proposal, standing: Standing, allowed: frozenset[str]
    ) -> str:
        """Nothing runs; the run hears the reviewers' words (``respond``), or the task is told."""
        rejections = [d for d in standing.decisions if d.verdict is Choice.REJECT and d.reviewer in allowed]
        by = sorted({d.reviewer for d in rejections})
        if self._teller.responds(task):
            said = " / ".join(d.reason for d in rejections if d.reason)  # the words; names are in "by"
            self._teller.respond(proposal, "rejected", by, said)
        else:
            self._teller.tell(task, proposal, "rejected", f"rejected by {', '.join(by)}")
        self._release(proposal)
        return self._not_run(
            proposal.approval_id, f"rejected by {', '.join(by)}: {proposal.summary} will not happen"
        )

    def _expire(
        self, task: Task | None, proposal: Proposal, state: State, standing: Standing, now: float
    ) -> str:
        """Tell the task "expired" only if nobody decided in time, or it was approved but never ran."""
        if state is State.EXPIRED:
            self._teller.expired(task, proposal, "nobody decided in time")
            return self._settled(
                proposal, self._not_run(proposal.approval_id, "expired: nobody decided in time")
            )
        allowed = allowed_ids(self._config, proposal, standing)
        approved = standing.approved_at(proposal, allowed)
        window_passed = state is State.APPROVED and now > approved + proposal.run_within_seconds
        if window_passed and not action_ran(self._ledger, task, proposal, standing.current(proposal)):
            self._teller.expired(task, proposal, "approved, but not run within the run window")
            return self._settled(
                proposal, self._not_run(proposal.approval_id, "expired: approved but not run in time")
            )
        return self._not_run(proposal.approval_id, f"not expired ({state.value})")

    def _run(
        self,
        task: Task | None,
        proposal: Proposal,
        current: Current,
        approvers: list[str],
        approved_at: float,
    ) -> str:
        """The approved call (as its current version), in an ``execute_tool`` span of the delivery's trace."""
        attributes: tracing.Attributes = {
            "lockgate.approval.id": proposal.approval_id,
            "lockgate.approval.version": current.n,
            "lockgate.approval.approvers": approvers,
        }
        with tracing.tool_span(proposal.tool, attributes):
            return self._execute(task, proposal, current, approvers, approved_at)

    def _execute(
        self,
        task: Task | None,
        proposal: Proposal,
        current: Current,
        approvers: list[str],
        approved_at: float,
    ) -> str:
        """Fingerprint, task, arguments and hard policies re-checked; then the ledger runs it once."""
        checked = self._checked(task, proposal, current, approvers)
        if isinstance(checked, str):
            return checked
        tool, args, facts = checked.tool, checked.args, checked.facts
        assert task is not None  # noqa: S101 - _checked refused a missing task
        who = f"edited by {current.editor}, approved by" if current.n else "approved by"
        summary = (current.summary or tool.summary(args)) if current.n else proposal.summary
        try:
            op = run_once(
                self._ledger,
                tool,
                args,
                canonical=current.args,
                run_id=proposal.run_id,
                facts=facts,
                services=task.services,
                summary=f"{summary} ({who} {', '.join(approvers)})",
            )
        except LedgerConflict as exc:
            return self._not_run(proposal.approval_id, f"conflict: {exc}")
        tracing.annotate(traced(op))
        self._metrics.add_metric(name=f"ApprovedAction_{op.state.value}", unit="Count", value=1)
        self._log.info(
            "approved action",
            extra={
                "approval": proposal.approval_id,
                "state": op.state.value,
                "approvers": approvers,
                "version": current.n,
            },
        )
        if op.state not in (OpState.SUCCEEDED, OpState.FAILED):
            # The action may or may not have happened: telling the customer "not done" could be
            # false. Come back once reconciliation (or a person) has settled it, then tell once.
            raise Deferred(
                f"{summary}: outcome {op.state.value}, waiting for reconciliation", UNSETTLED_RETRY
            )
        result = json.dumps(op.result, default=str)[:300] if op.state is OpState.SUCCEEDED else op.error
        if current.n and self._teller.responds(task):  # the run hears what ran, as edited
            heard = "edited" if op.state is OpState.SUCCEEDED else "failed"
            by = _editor_first(current.editor, approvers)
            self._teller.respond(proposal, heard, by, op.error or "", current, op.result, summary)
        else:
            outcome = "done" if op.state is OpState.SUCCEEDED else "failed"
            self._teller.tell(task, proposal, outcome, op.error or "", facts, summary)
        return (
            f"{summary}: {op.state.value} ({who} {', '.join(approvers)} at {int(approved_at)}) {result or ''}"
        ).strip()

    def _checked(
        self, task: Task | None, proposal: Proposal, current: Current, approvers: list[str]
    ) -> Examined | str:
        """What would run (tool, validated arguments, live facts, requirement), or why it will not run."""
        if (
            fingerprint(current.args) != current.fingerprint
            or fingerprint(proposal.args) != proposal.fingerprint
        ):
            return self._not_run(proposal.approval_id, "the stored arguments were changed")
        examined = VersionChecks(self._tasks, self._config).examine(proposal, current.args)
        if isinstance(examined, Refusal):
            if examined.unfit is Unfit.SCHEMA:
                # A newer deployment changed what the tool takes: what the person approved is not what
                # would run now. It expires instead, and the task is told (lockgate.schema's rule).
                changed = "the action changed in a newer version of the tool"
                self._teller.expired(task, proposal, changed)
            if task is None or examined.unfit in (Unfit.GONE, Unfit.SCHEMA):
                return self._not_run(proposal.approval_id, examined.reason)
            return self._edit_refused(task, proposal, current, approvers, examined.reason)
        # The rules are read again now (a hook may read facts that changed): too few approvers, no run.
        enough = approvers == [VETO_PASSED] or approvers_suffice(  # a veto window nobody vetoed: runs
            self._config, proposal, examined.requirement, approvers
        )
        if not enough and task is not None:
            who = ", ".join(approvers) or "nobody"
            why = f"it now needs {examined.requirement.describe()}, approved by {who}"
            return self._edit_refused(task, proposal, current, approvers, why)
        return examined

    def _edit_refused(
        self, task: Task, proposal: Proposal, current: Current, approvers: list[str], why: str
    ) -> str:
        """An approved call that fails its checks now does not run; an edit's run hears why."""
        if current.n and self._teller.responds(task):
            self._teller.respond(proposal, "refused", _editor_first(current.editor, approvers), why, current)
        return self._not_run(proposal.approval_id, why)

    def _settled(self, proposal: Proposal, outcome: str) -> str:
        """``outcome``, after giving back the proposal's places: it will never run (again)."""
        self._release(proposal)
        return outcome

    def _release(self, proposal: Proposal) -> None:
        if self._limits is None:
            return
        try:
            self._limits.release(proposal)
        except StoreUnavailable as exc:
            # The slot frees itself when the proposal's windows end; the next proposal waits till then.
            self._metrics.add_metric(name="PendingReleaseFailed", unit="Count", value=1)
            self._log.warning(
                "pending places not released", extra={"approval": proposal.approval_id, "error": str(exc)}
            )

    def _not_run(self, approval_id: str, why: str) -> str:
        self._metrics.add_metric(name="ApprovedActionNotRun", unit="Count", value=1)
        self._log.info("approval not executed", extra={"approval": approval_id, "why": why})
        return f"not run: {why}"


def action_ran(ledger: Ledger, task: Task | None, proposal: Proposal, current: Current | None = None) -> bool:
    """Whether the ledger holds the approved action (in any state): then it was run, not expired."""
    tool = task.tool(proposal.tool) if task else None
    if tool is None:
        return False
    canonical = current.args if current is not None else proposal.args
    try:
        args = tool.validate(canonical)
    except ToolArgumentsInvalid:
        return False
    return ledger.get(operation_key_for(tool, args, proposal.run_id, canonical)) is not None


def _editor_first(editor: str, approvers: list[str]) -> list[str]:
    """Who decided an edited call: its editor, then the other approvers (each once)."""
    return [editor, *(a for a in approvers if a != editor)]
