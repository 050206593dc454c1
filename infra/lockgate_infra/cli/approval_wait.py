"""`lockgate approvals approve|edit|reject --wait`: wait for what is actually pending.

Another reviewer's approval: say so at once, naming who may give it, and return (nothing runs
until then, and the worker has nothing to do). Otherwise the worker acts on the decision's inbox
event: wait for its outcome, up to WAIT_SECONDS.
"""

from __future__ import annotations

import time

from lockgate.approvals.decisions import Choice, DecisionOutcome, State
from lockgate.approvals.review_queue import ReviewQueue
from lockgate.errors import DeliveryNotFound
from lockgate.inbox.store import InboxStore
from lockgate_infra.cli.targets import Target

WAIT_SECONDS = 60  # --wait: how long the worker may take to act on a decision


def waited(
    queue: ReviewQueue, target: Target, approval_id: str, verdict: Choice, outcome: DecisionOutcome
) -> str:
    """--wait: what is actually pending. Another reviewer: say so now; else what the worker did."""
    if outcome is DecisionOutcome.AWAITING:
        status = queue.status(approval_id)
        others = (
            [r for r in status.eligible if r not in {d.reviewer for d in status.decisions}] if status else []
        )
        who = f" ({', '.join(others)} may)" if others else ""
        return (
            f"then: waiting for another reviewer to approve{who}; nothing runs until then "
            f"(lockgate approvals show {approval_id})"
        )
    return _acted_on(target, approval_id, verdict)


def _acted_on(target: Target, approval_id: str, verdict: Choice) -> str:
    """What the worker did with the decision: its inbox event's outcome, once it has one."""
    from lockgate.approvals.events import SOURCE
    from lockgate.inbox.models import delivery_key

    state = State.APPROVED if verdict is Choice.APPROVE else State.REJECTED
    key = delivery_key(SOURCE, f"{approval_id}#{state.value}")
    inbox = InboxStore(target.client("dynamodb"), target.name("InboxTable"))
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        try:
            event = inbox.get(key)
        except DeliveryNotFound:
            event = None
        if event is not None and event.status.value == "done":
            return f"then: {event.outcome or 'done'}"
        if event is not None and event.status.value == "failed":
            return f"then: failed: {event.last_error}"
        time.sleep(0.5)
    return f"then: not acted on within {WAIT_SECONDS} s (is the worker running? lockgate inbox show {key})"
