"""A replayed delivery is a new run, but its side effects still happen once: the shop's refund is
keyed in the ledger by its business identity (order + amount), not by the run."""

from __future__ import annotations

import io
import json
import time
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from lockgate.actions.ledger import Ledger
from lockgate.agent.handler import route_tasks
from lockgate.approvals.decisions import Choice, DecisionRecord, DecisionStore
from lockgate.approvals.events import approval_event
from lockgate.approvals.executor import ApprovalExecutor
from lockgate.approvals.limits import PendingLimits
from lockgate.approvals.proposals import Proposal, ProposalStore
from lockgate.clock import FixedClock, SystemClock
from lockgate.config import load_config
from lockgate.inbox.events import internal_event
from lockgate.inbox.models import Status
from lockgate.inbox.routing import InboxEvent, TaskContext
from lockgate.telemetry import CountingMetrics
from lockgate_infra.cli import main as cli
from lockgate_infra.cli.targets import Target
from lockgate_infra.evals.shoprig import ShopRig, shop_rig
from shop.model import scripted_model
from tests.support import LOG, Aws, Harness, make_config

ROOT = Path(__file__).resolve().parents[2]
APPROVALS = load_config(ROOT / "lockgate.toml").approvals
EMAIL = {
    "message_id": "m-1",
    "from": "grace@example.com",
    "subject": "Broken order",
    "text": "My order A-2001 arrived broken. Please refund $20. Grace",
}


def approve_and_execute(rig: ShopRig, run_id: str) -> str:
    """A refunds reviewer approves the run's proposal; the worker's executor acts on it."""
    db, clock = rig.session.client("dynamodb"), SystemClock()
    proposals = ProposalStore(db, rig.names["ApprovalsTable"])
    decisions = DecisionStore(db, rig.names["DecisionsTable"])
    (item,) = [i for i in rig.scan("ApprovalsTable") if i["run_id"]["S"] == run_id]
    proposal = Proposal.from_item(item)
    reviewer = APPROVALS.reviewers_for(proposal.tool)[0].id
    now = int(clock.now())
    record = DecisionRecord(proposal.approval_id, reviewer, Choice.APPROVE, now, proposal.fingerprint)
    decisions.record(record)
    executor = ApprovalExecutor(
        proposals=proposals,
        decisions=decisions,
        tasks={rig.task.name: rig.task},
        ledger=Ledger(db, rig.names["StateTable"], clock),
        config=APPROVALS,
        clock=clock,
        log=LOG,
        metrics=CountingMetrics(),
        # As deployed: a settled proposal gives back its place (one pending refund per order).
        limits=PendingLimits(db, rig.names["ApprovalsTable"], rig.names["StateTable"], APPROVALS),
    )
    event = approval_event(proposal.approval_id, "approved", now)
    context = TaskContext(event.pk, lambda: 60.0, None, LOG, CountingMetrics())  # type: ignore[arg-type]
    return executor(InboxEvent(event, event.body or b""), context)


def test_a_replayed_refund_request_makes_a_new_run_but_refunds_once(monkeypatch: pytest.MonkeyPatch) -> None:
    with shop_rig(scripted_model(), approvals=APPROVALS) as rig:
        # Given the shop's worker, and a refund email that ran, was approved, and refunded once
        harness = Harness(Aws(rig.session, rig.names), make_config(), FixedClock(time.time() + 5))
        route_tasks(harness.router, [rig.task], rig.loop, rig.clock)
        body = json.dumps(EMAIL).encode()
        original = internal_event("helpdesk", "m-1", "email", body, int(time.time()))
        harness.store().put_new(original)
        harness.worker().process(original.pk, "rh", lambda: 300.0)
        assert harness.store().get(original.pk).status is Status.DONE
        assert "SUCCEEDED" in approve_and_execute(rig, original.pk)
        assert len(rig.scan("ShopPaymentsTable")) == 1
        # When the operator replays the email on purpose and the worker runs the replay
        target = Target(rig.session, None, dict(rig.names), "the shop")
        monkeypatch.setattr(cli, "_target", lambda args: target)
        out = io.StringIO()
        with redirect_stdout(out):
            assert cli.main(["inbox", "replay", original.pk, "--by", "ops@example.com"]) == 0
        replay = f"{original.pk}#replay1"
        harness.clock.advance(5)
        harness.worker().process(replay, "rh", lambda: 300.0)
        # Then the replay is a run of its own that asked again, and the approval runs through the ledger
        assert harness.store().get(replay).status is Status.DONE
        assert rig.runs.get(replay) is not None
        outcome = approve_and_execute(rig, replay)
        # And the refund, same order and amount, is the ledger's recorded one: no second payment
        assert "SUCCEEDED" in outcome
        payments = rig.scan("ShopPaymentsTable")
        assert len(payments) == 1 and payments[0]["order_id"]["S"] == "A-2001"
        # And `runs show` says so for the replay's run
        out = io.StringIO()
        with redirect_stdout(out):
            assert cli.main(["runs", "show", replay]) == 0
        assert f"not run again: the ledger already holds it from run {original.pk}" in out.getvalue()
