"""A person's decision resumes the run that proposed the call (Task.respond): what the model sees,
the step budget, redeliveries, and the events a run cannot take up. The loop's own logic on the
in-memory stores (their contract: test_store_contracts) and the real SDK against the stub."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from lockgate.actions.facts import RunFacts
from lockgate.actions.guard import NeedsPerson
from lockgate.actions.responses import DecisionResponse
from lockgate.agent import decision_step
from lockgate.agent.loop import AgentLoop
from lockgate.agent.resume import DecisionResponses
from lockgate.agent.tasks import Task
from lockgate.clock import FixedClock
from lockgate.errors import Deferred
from lockgate.inbox.routing import InboxEvent, TaskContext
from lockgate_infra.stub.models import Scripted
from lockgate_infra.stub.replies import Reply
from lockgate_infra.stub.server import StubAnthropic
from tests.agent.conftest import AgentRig, event
from tests.agent.toolkit import Effects, make_task
from tests.fakes import MemoryLedger, MemoryRuns
from tests.support import LOG

DEADLINE = 10_000_000_000.0
RUN = "github#d-1"
OWNER = "owner@example.com"


class Proposals:
    """Stands in for the approvals side: every call that needs a person becomes a proposal, recorded."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str]] = []  # (tool, call id)

    def draft_only(self, tool: str) -> bool:
        return False

    def waiting(self, task: str, tool: str, target: str) -> dict[str, Any] | None:
        return None

    def request(
        self,
        *,
        task: str,
        run_id: str,
        call_id: str,
        need: NeedsPerson,
        unverified_reason: str,
        facts: RunFacts,
    ) -> tuple[str, str]:
        self.asked.append((need.tool.name, call_id))
        return (
            f"NOT DONE YET: {need.tool.name} is waiting for a person's approval. Nothing has happened.",
            "proposed",
        )


@pytest.fixture
def rig(stub: StubAnthropic, clock: FixedClock) -> AgentRig:
    return AgentRig(None, stub, clock, stores=(MemoryRuns(clock), MemoryLedger()))  # type: ignore[arg-type]


class Shop:
    """A task that proposes a payment, its loop, and the worker's handler for decisions."""

    def __init__(self, rig: AgentRig, effects: Effects, **task: Any) -> None:
        self.rig, self.effects, self.proposals = rig, effects, Proposals()
        self.task: Task = make_task(effects, **{"respond": True, **task})
        self.loop: AgentLoop = rig.loop({"approvals": self.proposals})
        self.started = {RUN: event()}

    def handler(self, task: Task | None = None) -> DecisionResponses:
        """The worker's handler for decisions, as the runtime wires it, on these stores."""
        tasks = [task or self.task]
        return DecisionResponses(
            tasks, self.loop, self.rig.runs(), self, self.rig.clock, LOG, self.rig.metrics
        )

    def get(self, delivery: str) -> InboxEvent | None:
        """The event that started a run (what the inbox keeps)."""
        return self.started.get(delivery)

    def propose(self) -> None:
        """The run asks a person to approve paying $80, tells the owner so and ends its turn."""
        self.loop.run(self.task, self.started[RUN], DEADLINE)

    def hear(self, response: DecisionResponse, task: Task | None = None) -> str:
        delivery = response.to_event(int(self.rig.clock.now()))
        context = TaskContext(delivery.pk, lambda: 300.0, None, LOG, self.rig.metrics)  # type: ignore[arg-type]
        return self.handler(task)(InboxEvent(delivery, delivery.body or b""), context)

    def run(self) -> Any:
        return self.rig.runs().get(RUN)


def use(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": args}


def say(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


ASK_TO_PAY = [
    Reply([say("Paying needs approval."), use("t1", "pay", {"amount": 80})], "tool_use"),
    Reply([say("Asked a person to approve the payment.")]),
]


def rejected(reason: str = "item was used", approval_id: str = "ap_1") -> DecisionResponse:
    return DecisionResponse(
        run_id=RUN,
        approval_id=approval_id,
        task="test-task",
        call_id="t1",
        tool="pay",
        outcome="rejected",
        by=("bob",),
        reason=reason,
        proposed={"amount": 80.0},
    )


def tell_owner(text: str, call_id: str = "t2") -> Reply:
    return Reply([use(call_id, "send", {"to": OWNER, "text": text})], "tool_use")


def test_a_rejection_with_its_reason_reaches_the_model_and_the_run_goes_on(rig: AgentRig) -> None:
    # Given a run that proposed paying $80 and ended its turn
    effects = Effects()
    rig.stub.set_model(
        Scripted([*ASK_TO_PAY, tell_owner("Bob said no: item was used."), Reply([say("Told.")])])
    )
    shop = Shop(rig, effects)
    shop.propose()
    assert shop.proposals.asked == [("pay", "t1")] and shop.run().status == "completed"
    # When Bob's rejection, with his reason, comes back to the run
    outcome = shop.hear(rejected())
    # Then the model's next request carries it as the result of a call Lockgate made for it: joined
    # to its last turn, answered in the next user message, the tool offered from then on
    first, _, resumed, _ = rig.stub.requests
    assert decision_step.TOOL not in [t["name"] for t in first["tools"]]
    assert [t["name"] for t in resumed["tools"]][-1] == decision_step.TOOL
    *_, asked, answered = resumed["messages"]
    call = decision_step.call_id("ap_1", "rejected")
    assert asked["role"] == "assistant" and [b["type"] for b in asked["content"]] == ["text", "tool_use"]
    assert asked["content"][-1] == use(call, decision_step.TOOL, {"approval_id": "ap_1"})
    (result,) = answered["content"]
    assert result["tool_use_id"] == call and "is_error" not in result
    assert json.loads(result["content"]) == {
        "approval_id": "ap_1",
        "tool": "pay",
        "proposed": {"amount": 80.0},
        "decision": "rejected",
        "by": ["bob"],
        "reviewer_said": "item was used",
    }
    # And the run acted on it: the owner was told, nothing was paid, the run ended again
    assert outcome == "test-task: completed: Told."
    assert [s["text"] for s in effects.sent] == ["Bob said no: item was used."] and effects.paid == []
    run = shop.run()
    assert [(s.n, s.kind) for s in run.steps] == [
        (1, "model"),
        (1, "tools"),
        (2, "model"),
        (3, "decision"),
        (4, "model"),
        (4, "tools"),
        (5, "model"),
    ]
    assert (run.status, run.outcome, run.resumed_by) == ("completed", "Told.", "ap_1#rejected")
    # And the run's totals are the whole run's: four model calls, two made before the decision
    assert run.totals["model_calls"] == 4 and run.totals["replayed_steps"] == 0


def test_a_redelivered_decision_changes_nothing(rig: AgentRig) -> None:
    # Given a run that heard a rejection and told the owner
    effects = Effects()
    rig.stub.set_model(Scripted([*ASK_TO_PAY, tell_owner("No: item was used."), Reply([say("Told.")])]))
    shop = Shop(rig, effects)
    shop.propose()
    shop.hear(rejected())
    steps, calls = len(shop.run().steps), len(rig.stub.requests)
    # When the same decision event is delivered again
    outcome = shop.hear(rejected())
    # Then the model is not asked again, nothing is sent again, the record is as it was
    assert outcome == "test-task: already heard ap_1#rejected; the run is completed: Told."
    assert len(rig.stub.requests) == calls and len(effects.sent) == 1
    assert len(shop.run().steps) == steps


def test_a_delivery_that_died_after_recording_the_decision_is_taken_up_where_it_stopped(
    rig: AgentRig,
) -> None:
    # Given a run a decision reopened and recorded, whose worker then died before the model answered
    effects = Effects()
    rig.stub.set_model(Scripted([*ASK_TO_PAY, tell_owner("No: item was used."), Reply([say("Told.")])]))
    shop = Shop(rig, effects)
    shop.propose()
    runs, response = rig.runs(), rejected()
    run = shop.run()
    assert runs.reopen(run, "ap_1#rejected")
    runs.record(run, 3, decision_step.KIND, decision_step.step_data(response))
    # When the event is delivered again
    outcome = shop.hear(response)
    # Then the run goes on from its record: the decision heard once, the owner told once
    assert outcome == "test-task: completed: Told."
    assert [s.kind for s in shop.run().steps].count("decision") == 1 and len(effects.sent) == 1


def test_with_no_model_step_left_the_decision_is_recorded_and_the_run_ends_without_a_call(
    rig: AgentRig,
) -> None:
    # Given a run that used both of its two model steps before the decision came
    effects = Effects()
    rig.stub.set_model(Scripted(ASK_TO_PAY))
    shop = Shop(rig, effects, max_steps=2)
    shop.propose()
    # When the rejection comes back
    outcome = shop.hear(rejected())
    # Then no model is called, the decision is on the record, and the run ends saying why
    assert len(rig.stub.requests) == 2 and effects.sent == []
    run = shop.run()
    assert [s.kind for s in run.steps][-1] == "decision" and run.status == "step_limit"
    assert run.outcome == (
        "stopped after 2 steps: the decision on ap_1 (rejected) reached the run "
        "with no model step left to act on it"
    )
    assert outcome == f"test-task: step_limit: {run.outcome}"


def test_the_steps_after_a_decision_count_against_the_same_budget(rig: AgentRig) -> None:
    # Given a run of three model steps that used two before the decision
    effects = Effects()
    rig.stub.set_model(Scripted([*ASK_TO_PAY, tell_owner("No."), Reply([say("never asked")])]))
    shop = Shop(rig, effects, max_steps=3)
    shop.propose()
    # When the rejection comes back
    shop.hear(rejected())
    # Then the model gets one more step (its call runs) and no fourth
    assert len(rig.stub.requests) == 3 and len(effects.sent) == 1
    run = shop.run()
    assert [s.kind for s in run.steps].count("model") == 3
    assert (run.status, run.outcome) == ("step_limit", "stopped after 3 steps")


def test_an_edited_call_that_ran_is_told_with_what_ran_and_what_the_reviewer_changed(rig: AgentRig) -> None:
    effects = Effects()
    rig.stub.set_model(Scripted([*ASK_TO_PAY, Reply([say("Paid $40 after review.")])]))
    shop = Shop(rig, effects)
    shop.propose()
    edited = dataclasses.replace(
        rejected(reason=""), outcome="edited", by=("alice",), ran={"amount": 40.0}, result={"paid": 40.0}
    )
    shop.hear(edited)
    (result,) = rig.stub.requests[-1]["messages"][-1]["content"]
    assert json.loads(result["content"]) == {
        "approval_id": "ap_1",
        "tool": "pay",
        "proposed": {"amount": 80.0},
        "decision": "edited",
        "by": ["alice"],
        "ran_with": {"amount": 40.0},
        "changed_by_reviewer": {"amount": 40.0},
        "result": {"paid": 40.0},
    }
    assert shop.run().outcome == "Paid $40 after review."


def test_the_model_may_read_a_decision_again_and_another_id_is_unknown(rig: AgentRig) -> None:
    effects = Effects()
    again = Reply(
        [
            use("t2", decision_step.TOOL, {"approval_id": "ap_1"}),
            use("t3", decision_step.TOOL, {"approval_id": "ap_other"}),
        ],
        "tool_use",
    )
    rig.stub.set_model(Scripted([*ASK_TO_PAY, again, Reply([say("Read it twice.")])]))
    shop = Shop(rig, effects)
    shop.propose()
    shop.hear(rejected())
    known, unknown = rig.stub.requests[-1]["messages"][-1]["content"]
    assert json.loads(known["content"])["reviewer_said"] == "item was used" and "is_error" not in known
    assert unknown["is_error"] is True
    assert unknown["content"] == "Unknown approval 'ap_other': no decision on it has reached this run."


def test_a_call_after_the_decision_goes_through_the_guard_and_may_ask_a_person_again(rig: AgentRig) -> None:
    # Given a rejected $80 payment
    effects = Effects()
    pay_less = Reply([use("t2", "pay", {"amount": 60})], "tool_use")
    rig.stub.set_model(Scripted([*ASK_TO_PAY, pay_less, Reply([say("Asked again for less.")])]))
    shop = Shop(rig, effects)
    shop.propose()
    # When the model proposes a smaller payment, still over the threshold
    shop.hear(rejected())
    # Then it is a second proposal: nothing was paid
    assert shop.proposals.asked == [("pay", "t1"), ("pay", "t2")] and effects.paid == []


def test_a_reply_unique_per_run_may_be_sent_once_more_after_each_decision(rig: AgentRig) -> None:
    # Given a send the ledger allows once per recipient per run, used before the decision
    effects = Effects()
    task = make_task(effects)
    once_per_run = [
        dataclasses.replace(t, identity=lambda a: f"to#{a.to}", identity_per_run=True)
        if t.name == "send"
        else t
        for t in task.tools
    ]
    first = Reply(
        [use("t0", "send", {"to": OWNER, "text": "Asked a person."}), use("t1", "pay", {"amount": 80})],
        "tool_use",
    )
    rig.stub.set_model(
        Scripted([first, Reply([say("Waiting.")]), tell_owner("Rejected."), Reply([say("Told.")])])
    )
    shop = Shop(rig, effects, tools=once_per_run)
    shop.propose()
    # When the rejection resumes the run and the model tells the owner
    shop.hear(rejected())
    # Then both messages went out: the part after a decision is its own
    assert [s["text"] for s in effects.sent] == ["Asked a person.", "Rejected."]


def test_a_second_decision_is_heard_after_the_first_in_the_same_run(rig: AgentRig) -> None:
    effects = Effects()
    rig.stub.set_model(Scripted([*ASK_TO_PAY, Reply([say("First heard.")]), Reply([say("Second heard.")])]))
    shop = Shop(rig, effects)
    shop.propose()
    shop.hear(rejected())
    shop.hear(rejected(reason="still no", approval_id="ap_2"))
    run = shop.run()
    assert [(s.n, s.kind) for s in run.steps][3:] == [
        (3, "decision"),
        (4, "model"),
        (5, "decision"),
        (6, "model"),
    ]
    assert (run.outcome, run.resumed_by) == ("Second heard.", "ap_2#rejected")
    said = [json.loads(b["content"]).get("reviewer_said") for b in _decision_results(rig.stub.requests[-1])]
    assert said == ["item was used", "still no"]


def test_a_decision_waits_while_the_run_is_still_going(rig: AgentRig) -> None:
    # Given a run that has not ended (its own delivery is being handled)
    shop = Shop(rig, Effects())
    rig.runs().open(RUN, "test-task", RUN)
    # When the decision arrives
    # Then it is deferred, to be taken up once the run ended, and nothing is recorded
    with pytest.raises(Deferred):
        shop.hear(rejected())
    assert shop.run().steps == [] and rig.stub.requests == []


def test_a_decision_waits_while_another_decision_resumes_the_run(rig: AgentRig) -> None:
    effects = Effects()
    rig.stub.set_model(Scripted(ASK_TO_PAY))
    shop = Shop(rig, effects)
    shop.propose()
    assert rig.runs().reopen(shop.run(), "ap_1#rejected")
    with pytest.raises(Deferred):
        shop.hear(rejected(approval_id="ap_2"))


@pytest.mark.parametrize(
    ("respond", "listed", "said"),
    [
        (False, True, "not run: task test-task does not set respond"),
        (True, False, "not run: task test-task no longer exists"),
    ],
)
def test_a_task_that_does_not_respond_or_is_gone_is_not_resumed(
    rig: AgentRig, respond: bool, listed: bool, said: str
) -> None:
    # Given a run of a task that proposed a payment
    effects = Effects()
    rig.stub.set_model(Scripted(ASK_TO_PAY))
    shop = Shop(rig, effects)
    shop.propose()
    other = dataclasses.replace(shop.task, respond=respond, name="test-task" if listed else "renamed")
    # When a decision comes back for it
    outcome = shop.hear(rejected(), task=other)
    # Then it says why it was not heard, and the run is as it ended
    assert outcome == said
    run = shop.run()
    assert run.status == "completed" and [s.kind for s in run.steps].count("decision") == 0
    assert len(rig.stub.requests) == 2 and rig.metrics.totals["DecisionNotHeard"] == 1


def test_a_run_that_ended_in_a_cut_off_reply_is_not_resumed(rig: AgentRig) -> None:
    effects = Effects()
    rig.stub.set_model(Scripted([Reply([say("Paying"), use("t1", "pay", {"amount": 80})], "max_tokens")]))
    shop = Shop(rig, effects)
    shop.propose()
    assert shop.hear(rejected()).startswith("not run: the run ended as gave_up")
    assert shop.run().status == "gave_up"


def _decision_results(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        b
        for m in request["messages"]
        if m["role"] == "user" and isinstance(m["content"], list)
        for b in m["content"]
        if b.get("tool_use_id", "").startswith("toolu_lockgate_")
    ]


def test_a_decision_a_finished_run_cannot_hear_goes_to_on_decision_once(rig: AgentRig) -> None:
    # Given a run that ended with its reply cut off, of a task that responds and has on_decision
    told: list[tuple[str, str, str]] = []
    effects = Effects()
    rig.stub.set_model(Scripted([Reply([say("Paying"), use("t1", "pay", {"amount": 80})], "max_tokens")]))
    shop = Shop(
        rig,
        effects,
        on_decision=lambda notice, services: told.append(
            (notice.outcome, notice.detail, str(notice.facts.get("owner")))
        ),
    )
    shop.propose()
    ledger = MemoryLedger()
    handler = DecisionResponses([shop.task], shop.loop, rig.runs(), shop, rig.clock, LOG, rig.metrics, ledger)
    decision = dataclasses.replace(rejected(), facts={"owner": "owner@example.com"}, summary="pay $80.00")
    delivery = decision.to_event(int(rig.clock.now()))
    context = TaskContext(delivery.pk, lambda: 300.0, None, LOG, rig.metrics)  # type: ignore[arg-type]
    # When the rejection comes back, twice
    first = handler(InboxEvent(delivery, delivery.body or b""), context)
    handler(InboxEvent(delivery, delivery.body or b""), context)
    # Then the run is left as it ended, and the task heard the rejection once, with its facts
    assert first.endswith("the task was told through on_decision (rejected)")
    assert told == [("rejected", "item was used", "owner@example.com")]
    assert shop.run().status == "gave_up" and effects.paid == []
