"""One atomic decision: however links, Slack clicks and the CLI race, exactly one outcome is written.

Every channel ends in ``DecisionRecorder.record``; each decision is one transaction with the
proposal's ``#state`` revision (lockgate.approvals.standing). moto's dispatch is serialised
(tests.support.race) so these test our transaction, not moto's own races.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lockgate.approvals.decisions import Choice, DecisionOutcome
from tests.agent.conftest import AgentRig
from tests.agent.test_approval_edits import TWO_PERSON, edit_form, editable_flow, rows
from tests.agent.test_approvals import Approvals, decisions_table
from tests.agent.toolkit import Effects
from tests.support import race


def channels(flow: Approvals, approval_id: str) -> dict[str, Callable[[str, Choice], Any]]:
    """Each channel's way to decide, prepared before the race (pages opened, forms filled)."""
    proposal = flow.proposals.get(approval_id)
    assert proposal is not None
    forms = {
        (who, verdict): (
            flow.link(approval_id, who),
            flow.form(approval_id, flow.link(approval_id, who), verdict.value),
        )
        for who in ("alice", "bob")
        for verdict in Choice
    }

    def link(who: str, verdict: Choice) -> Any:
        query, form = forms[(who, verdict)]
        page = flow.desk.decide(approval_id, query, form)
        return page.status

    def recorder(via: str) -> Callable[[str, Choice], Any]:
        return lambda who, verdict: flow.desk.recorder.record(proposal, who, verdict, via)

    return {"link": link, "cli": recorder("cli"), "slack": recorder("slack")}


def test_ten_simultaneous_approvals_on_every_channel_write_one_decision_and_one_event(rig: AgentRig) -> None:
    # Given a payment one reviewer may settle, and ten approvals ready on the page, the CLI and Slack
    flow = Approvals(rig, Effects())
    approval_id = flow.propose_payment(80)
    ways = channels(flow, approval_id)
    results: list[Any] = []
    works = [
        (lambda name=name, who=who: results.append((name, who, ways[name](who, Choice.APPROVE))))
        for name, who in [
            ("link", "alice"),
            ("cli", "bob"),
            ("slack", "alice"),
            ("cli", "alice"),
            ("slack", "bob"),
        ]
        * 2
    ]
    # When all ten land at once
    race(works)
    # Then exactly one decision row was written and one event queued; every other caller was told
    (row,) = decisions_table(flow)
    winner = row["reviewer"]["S"]
    recorded = [r for r in results if r[2] in (200, DecisionOutcome.APPROVED)]
    assert len(recorded) == 1 and recorded[0][1] == winner
    assert all(
        r[2] in (409, DecisionOutcome.ALREADY_APPROVED, DecisionOutcome.ALREADY_DECIDED)
        for r in results
        if r not in recorded
    )
    assert rows(flow)["#state"]["revision"]["N"] == "1"
    (outcome,) = flow.execute_all()
    assert outcome.startswith("pay $80.00: SUCCEEDED") and len(flow.effects.paid) == 1


def test_an_approval_racing_a_rejection_has_one_outcome_and_it_is_the_one_that_ran(rig: AgentRig) -> None:
    for attempt in range(4):  # whichever wins, the other is told, and what ran matches the row
        race_approve_and_reject(rig, amount=80 + attempt)


def race_approve_and_reject(rig: AgentRig, amount: int) -> None:
    # Given a payment, alice's approve ready on her page and bob's reject ready in the CLI
    flow = Approvals(rig, Effects())
    approval_id = flow.propose_payment(amount, delivery=f"d-race-{amount}")
    ways = channels(flow, approval_id)
    outcomes: dict[str, Any] = {}
    # When both land at once
    race(
        [
            lambda: outcomes.__setitem__("approve", ways["link"]("alice", Choice.APPROVE)),
            lambda: outcomes.__setitem__("reject", ways["cli"]("bob", Choice.REJECT)),
        ]
    )
    # Then one decision row is written, the loser is told, and what ran matches the row
    decided = [r for r in decisions_table(flow) if r["approval_id"]["S"] == approval_id]
    assert len(decided) == 1, decided
    ran = flow.execute_all()
    if decided[0]["verdict"]["S"] == "approve":
        assert outcomes == {"approve": 200, "reject": DecisionOutcome.ALREADY_APPROVED}
        assert len(flow.effects.paid) == 1 and ran[0].startswith(f"pay ${amount}.00: SUCCEEDED")
    else:
        assert outcomes == {"approve": 409, "reject": DecisionOutcome.REJECTED}
        assert flow.effects.paid == [] and ran[0].startswith("not run: rejected by bob")


def test_two_reviewers_editing_at_once_make_one_version(rig: AgentRig) -> None:
    # Given a two-person payment, and alice and bob each about to approve a different amount
    flow = editable_flow(rig, TWO_PERSON)
    approval_id = flow.propose_payment(80)
    forms = {
        who: (flow.link(approval_id, who), edit_form(flow, approval_id, who, amount=amount))
        for who, amount in (("alice", "40"), ("bob", "60"))
    }
    statuses: list[int] = []
    # When both post at once (each from a page showing $80)
    race(
        [lambda who=who: statuses.append(flow.desk.decide(approval_id, *forms[who]).status) for who in forms]
    )
    # Then one edit became version 1 and the other was told it changed; nothing else was written
    stored = rows(flow)
    assert sorted(statuses) == [200, 409] and "#v2" not in stored and "#v1" in stored
    assert [k for k in stored if k.endswith("#v1") and not k.startswith("#")] == [
        f"{stored['#v1']['editor']['S']}#v1"
    ]
    assert flow.execute_all() == [] and flow.effects.paid == []  # one of two approvals so far
