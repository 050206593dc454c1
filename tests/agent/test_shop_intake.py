"""The shop reads the customer's request before acting: structured output, escalation, hand-off."""

from __future__ import annotations

from typing import Any

from moto.core.models import DEFAULT_ACCOUNT_ID
from moto.ses.models import ses_backends

from lockgate_infra.evals.shoprig import Email, shop_rig
from lockgate_infra.stub.conversation import text
from lockgate_infra.stub.extraction import is_extraction
from lockgate_infra.stub.replies import Reply
from lockgate_infra.stub.screening import is_screen
from shop.intake import CHEAP_MODEL, ESCALATION_MODEL
from shop.model import scripted_model

BROKEN = Email(
    "grace@example.com", "Broken teapot, order A-2001", "My order A-2001 arrived broken. Refund $80 please."
)


def sent() -> list[Any]:
    return list(ses_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].sent_messages)


def misreading(models: set[str], order_id: str = "A-2011") -> Any:
    """The shop model, except that these models read ``order_id`` in every extraction."""

    def model(request: dict[str, Any]) -> Reply:
        if is_extraction(request) and request["model"] in models:
            # Structured outputs: the reply is the JSON alone (the API decodes it under the schema).
            return Reply([text(f'{{"order_id": "{order_id}", "intent": "refund", "amount": "80"}}')])
        return scripted_model()(request)

    return model


def test_the_request_is_extracted_grounded_and_given_to_the_agent() -> None:
    with shop_rig(scripted_model()) as rig:
        rig.answer(BROKEN, "msg-intake-1")
        run = rig.runs.get("helpdesk#msg-intake-1")
        assert run is not None and run.status == "completed"
        # Then step 0 holds the request the cheap model read, checked against the email
        intake = run.step(0, "intake")
        assert intake is not None
        assert intake.data["value"] == {"order_id": "A-2001", "intent": "refund", "amount": "80"}
        assert intake.data["tried"] == [CHEAP_MODEL] and intake.data["model"] == CHEAP_MODEL
        # And the agent's first message carries it, and the customer got one reply
        first = next(r for r in rig.stub.requests if r.get("tools"))
        assert '"order_id": "A-2001"' in first["messages"][0]["content"][0]["text"]
        assert [m.destinations["ToAddresses"] for m in sent()] == [["grace@example.com"]]
        # And the extraction's cost is part of the run's, under the cheap model (which also screened
        # the email and the help page it read)
        screens = [r for r in rig.stub.requests if is_screen(r)]
        assert len(screens) == 2
        assert run.totals["by_model"][CHEAP_MODEL]["calls"] == 1 + len(screens)


def test_an_order_that_fails_the_check_escalates_to_the_larger_model() -> None:
    # Given an email naming two numbers, and a cheap model that picks the one the shop does not have
    email = Email(
        BROKEN.sender, BROKEN.subject, "Not A-9999: my order A-2001 arrived broken. Refund $80 please."
    )
    with shop_rig(misreading({CHEAP_MODEL}, "A-9999")) as rig:
        rig.answer(email, "msg-intake-2")
        run = rig.runs.get("helpdesk#msg-intake-2")
        assert run is not None and run.status == "completed"
        # Then the larger model was asked and its reading was used
        intake = run.step(0, "intake")
        assert intake is not None
        assert intake.data["tried"] == [CHEAP_MODEL, ESCALATION_MODEL]
        assert intake.data["model"] == ESCALATION_MODEL and intake.data["value"]["order_id"] == "A-2001"
        assert len(sent()) == 1


def test_when_every_model_gives_up_the_email_goes_to_a_person_and_nothing_is_done() -> None:
    # Given both models read an order number that is not in the email (grounding fails every attempt)
    with shop_rig(misreading({CHEAP_MODEL, ESCALATION_MODEL})) as rig:
        outcome = rig.loop.run(
            rig.task, BROKEN.event("msg-intake-3", int(rig.clock.now())), rig.clock.now() + 60
        )
        # Then the run ends as needs_person with the reasons, before any tool is offered or used
        assert outcome.status == "needs_person"
        assert f"{ESCALATION_MODEL} gave up: order_id: 'A-2011' does not appear" in outcome.summary
        run = rig.runs.get("helpdesk#msg-intake-3")
        assert run is not None and run.status == "needs_person"
        intake = run.step(0, "intake")
        assert intake is not None and intake.data["tried"] == [CHEAP_MODEL, ESCALATION_MODEL]
        assert [s.kind for s in run.steps] == ["intake"]
        assert not any(r.get("tools") for r in rig.stub.requests)
        assert sent() == [] and rig.scan("ShopPaymentsTable") == []
        assert rig.loop._metrics.totals["RunNeedsPerson"] == 1  # type: ignore[attr-defined]
        # And a redelivery replays the recorded give-up without asking the models again
        calls = rig.stub.calls
        again = rig.loop.run(
            rig.task, BROKEN.event("msg-intake-3", int(rig.clock.now())), rig.clock.now() + 60
        )
        assert again.status == "needs_person" and rig.stub.calls == calls


def test_the_transcript_shows_the_request_read_and_a_give_up() -> None:
    from lockgate_infra.cli.transcript import render

    with shop_rig(misreading({CHEAP_MODEL, ESCALATION_MODEL})) as rig:
        rig.loop.run(rig.task, BROKEN.event("msg-intake-4", int(rig.clock.now())), rig.clock.now() + 60)
        run = rig.runs.get("helpdesk#msg-intake-4")
        assert run is not None
        text = render(run)
    assert "status needs_person" in text
    assert f"request NOT read ({CHEAP_MODEL} → {ESCALATION_MODEL}): a person must handle it" in text
