"""One reply per customer per run, even when a re-asked model words it differently (the shop's
send_email ledger identity is the recipient, scoped to the run)."""

from __future__ import annotations

import dataclasses
from typing import Any

from moto.core import DEFAULT_ACCOUNT_ID
from moto.ses.models import ses_backends

from lockgate_infra.evals.shoprig import Email, ShopRig, shop_rig
from lockgate_infra.stub.replies import Reply
from shop.model import scripted_model

ADA = "ada@example.com"
QUESTION = Email(ADA, "Where is my order A-1042?", "Hi, where is order A-1042? Ada")


def sent_to(address: str) -> list[Any]:
    messages = ses_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].sent_messages
    return [m for m in messages if address in str(getattr(m, "destinations", {})).lower()]


def reworded(reply: Any) -> Any:
    """The same reply, the email's wording (and the address's case) changed, as a re-asked model might."""
    if not isinstance(reply, Reply):
        return reply

    def reword(block: dict[str, Any]) -> dict[str, Any]:
        if block.get("type") != "tool_use" or block.get("name") != "send_email":
            return block
        words = {**block["input"], "to": ADA.title(), "body": "Hello again! " + block["input"]["body"]}
        return {**block, "input": words}

    return dataclasses.replace(reply, content=[reword(b) for b in reply.content])


def forget_the_run(rig: ShopRig, pk: str) -> None:
    """Lose the run's record (every step), keeping the operation ledger: the model is asked afresh."""
    db = rig.session.client("dynamodb")
    table = rig.names["StateTable"]
    for item in db.scan(TableName=table)["Items"]:
        if item["pk"]["S"] == f"run#{pk}":
            db.delete_item(TableName=table, Key={"pk": item["pk"], "sk": item["sk"]})


def test_a_rerun_that_rewords_the_reply_does_not_email_the_customer_twice() -> None:
    rewording = {"on": False}

    def model(request: dict[str, Any]) -> Any:
        reply = scripted_model()(request)
        return reworded(reply) if rewording["on"] else reply

    with shop_rig(model) as rig:
        # Given the customer's question answered once: one email to her
        event = rig.answer(QUESTION, "m-1")
        assert len(sent_to(ADA)) == 1
        # When the same run is done again from scratch and the model words the reply differently
        forget_the_run(rig, event.delivery.pk)
        rewording["on"] = True
        rig.loop.run(rig.task, event, rig.clock.now() + 120)
        # Then she still has one email: the reworded send was refused by the ledger, not sent
        assert len(sent_to(ADA)) == 1
        run = rig.runs.get(event.delivery.pk)
        assert run is not None
        tool_steps = [s for s in run.steps if s.kind == "tools"]
        outcomes = [
            c.get("outcome") for s in tool_steps for c in s.data["calls"] if c["tool"] == "send_email"
        ]
        assert outcomes and set(outcomes) == {"conflict"}
