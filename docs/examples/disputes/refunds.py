"""Refunding a disputed charge: the payments tool, held to the dispute by a policy, added to the task."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from disputes.payments import REFUND_CHARGE, PaymentsApi, RefundArgs
from lockgate import InboxEvent, RunFacts, Skip, Start, Task, Verdict


def only_the_disputed_charge(args: RefundArgs, facts: RunFacts) -> Verdict:
    """Refund the charge this dispute is about, by no more than it disputes."""
    if args.charge != facts.get("charge"):
        return Verdict.deny(f"this run may refund charge {facts.get('charge')} only")
    if args.amount > int(facts.get("amount", 0)):
        return Verdict.deny(f"the dispute is for {facts.get('amount')} cents: refund at most that")
    return Verdict.allow()


REFUND_DISPUTED = replace(REFUND_CHARGE, policies=(only_the_disputed_charge,))


def with_refunds(task: Task, payments: PaymentsApi) -> Task:
    """The scaffolded task, also able to refund the disputed charge (a person approves each)."""
    scaffolded = task.start

    def start(event: InboxEvent, services: Mapping[str, Any]) -> Start | Skip:
        begun = scaffolded(event, services)
        if isinstance(begun, Skip):
            return begun
        # Stripe signed this event: the charge and amount are facts, not the model's word.
        dispute = event.json()["data"]["object"]
        charge, amount = str(dispute["charge"]), int(dispute["amount"])
        return Start(
            prompt=f"{begun.prompt} It disputes charge {charge} for {amount} cents.",
            facts=RunFacts(values={**begun.facts.values, "charge": charge, "amount": amount}),
        )

    services = {**task.services, "payments": payments}
    return replace(task, start=start, tools=(*task.tools, REFUND_DISPUTED), services=services)
