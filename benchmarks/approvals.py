"""AWS requests and dollars per approved action: Lockgate's tables-and-queue approvals vs the same
flow on Step Functions ``waitForTaskToken``.

Ours is measured: large refund emails (each needs a person) go through the composed functions on
moto, every reviewer approves through the real page and form, and every AWS call the approval part
makes is metered — the proposal write in the agent run, the confirmation page and the decision
(the approval callback), and the approval event the worker executes (claim, re-checks, the
ledger, the refund, the notice to the customer). The notifier (the Approvals stream → one Lambda
invocation, one email per reviewer) runs outside the harness, so it is added as those units.

Step Functions is priced from its published rate ($0.025 per 1,000 state transitions, Standard
workflows) for the smallest equivalent machine: wait for the task token (notify), choice,
execute, tell the customer, succeed — 5 transitions — plus the same Lambda invocations (notify,
page, decision, execute) and the same emails. It keeps no per-reviewer decision record and no
link-signing secret; those would be extra there. The action itself (the refund's own writes) is
counted on both sides at the same measured cost.

Run: ``python -m benchmarks.approvals [--actions 6]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import sys
from dataclasses import dataclass
from typing import Any

SFN_TRANSITIONS = 5  # wait for token → choice → execute → notify customer → succeed
NOTIFIER_INVOCATIONS = 1  # the stream handler, per proposal


@dataclass
class Side:
    """One design's requests and dollars per approved action."""

    requests: float
    dollars: float
    detail: str


@dataclass(frozen=True)
class LambdaWork:
    """Per approved action, what both designs pay alike: invocations, compute and emails."""

    invocations: float
    gb_seconds: float
    emails: float


def measure(actions: int = 6) -> tuple[Side, Side, dict[str, float]]:
    """Ours (measured) and Step Functions (priced), per approved action."""
    usage, approved, reviewers = _metered(actions)
    per = max(approved, 1)
    work = _lambda_work(usage, per, reviewers)
    facts = {
        "approved": approved,
        "write_units": usage.write_units / per,
        "read_units": usage.read_units / per,
    }
    return _ours(usage, per, reviewers, work), _step_functions(reviewers, work), facts


def _metered(actions: int) -> tuple[Any, int, int]:
    """``actions`` refunds approved on moto, the approval part metered: (usage, approved, reviewers)."""
    from lockgate.approvals.limits import PendingLimits
    from lockgate.clock import FixedClock
    from lockgate_infra.chaos.drive import drive
    from lockgate_infra.chaos.faults import FaultPlan, Rates
    from lockgate_infra.chaos.housekeeping import housekeeping
    from lockgate_infra.chaos.run import START, account
    from lockgate_infra.chaos.traffic import CATALOGUE, Send
    from lockgate_infra.cost.meter import FunctionUsage, Meter, Usage

    refund = next(m for m in CATALOGUE if m.kind == "large-refund")
    # One refund waits per order and three per sender: each action is its own order, its senders
    # taking turns, so every one is proposed and approved (as distinct customers' refunds would be).
    mails = [_own_order(refund, n) for n in range(actions)]
    sends = [Send(f"msg-chaos-{n:04d}", False, [0], mail) for n, mail in enumerate(mails)]
    usage = Usage(events=actions, functions={"approval": FunctionUsage(512), "executor": FunctionUsage(1024)})
    meter = Meter(usage)
    plan = FaultPlan(1, Rates(aws_before=0, aws_after=0, crash_after_effect=0, reenter=0, model=0))
    with account(plan, FixedClock(START)) as world, meter.installed():
        _seed_orders(world, mails)
        world.desk.show = meter.timed("approval", world.desk.show)  # type: ignore[method-assign]
        world.desk.decide = meter.timed("approval", world.desk.decide)  # type: ignore[method-assign]
        for worker in world.workers:
            worker.process = _executor_only(meter, worker.process)  # type: ignore[method-assign]
        propose = PendingLimits.propose
        PendingLimits.propose = meter.timed("executor", propose)  # type: ignore[method-assign]
        try:
            tally = drive(world, plan, sends, housekeeping(world), approve_rate=1.0)
        finally:
            PendingLimits.propose = propose  # type: ignore[method-assign]
        approved = sum(1 for decision in tally.choices.decided.values() if decision == "approve")
        reviewers = len(world.config.approvals.reviewers_for("refund_order"))
    return usage, approved, reviewers


SENDERS = ("grace@example.com", "ada@example.com")


def _own_order(mail: Any, n: int) -> Any:
    """The large refund's email, about order A-9NNN of one of two customers."""
    order_id = f"A-9{n:03d}"
    body = mail.text.replace("A-2001", order_id)
    return dataclasses.replace(
        mail, sender=SENDERS[n % 2], subject=f"Broken blanket, order {order_id}", text=body
    )


def _seed_orders(world: Any, mails: list[Any]) -> None:
    """Each email's order: a copy of the seeded A-2001 ($80, delivered) belonging to its sender."""
    from shop.data import Orders
    from shop.seed import ORDERS

    template = next(o for o in ORDERS if o.order_id == "A-2001")
    orders = Orders(world.session.client("dynamodb"), world.names["ShopOrdersTable"])
    for n, mail in enumerate(mails):
        orders.put(dataclasses.replace(template, order_id=f"A-9{n:03d}", customer_email=mail.sender))


def _lambda_work(usage: Any, per: int, reviewers: int) -> LambdaWork:
    """Our functions' invocations and GB-seconds per approved action (AWS call time at the assumed
    latency), plus the notifier's invocation, the notice to the customer and the reviewers' links."""
    from lockgate_infra.cost.bill import Assumptions

    assume = Assumptions()
    gb_seconds = (
        sum(
            (max(0.0, f.own_seconds) + f.aws_calls * assume.call_ms / 1000) * f.memory_mb / 1024
            for f in usage.functions.values()
        )
        / per
    )
    return LambdaWork(
        invocations=sum(f.invocations for f in usage.functions.values()) / per + NOTIFIER_INVOCATIONS,
        gb_seconds=gb_seconds,
        emails=usage.emails / per + reviewers,
    )


def _ours(usage: Any, per: int, reviewers: int, work: LambdaWork) -> Side:
    """Lockgate: the measured calls and units, and the Lambda work."""
    from lockgate_infra.cost.prices import PRICES

    calls = sum(f.aws_calls for f in usage.functions.values()) / per
    return Side(
        requests=calls + work.invocations + reviewers,
        dollars=usage.write_units / per * PRICES.dynamodb_write_unit
        + usage.read_units / per * PRICES.dynamodb_read_unit
        + usage.sqs_requests / per * PRICES.sqs_request
        + work.invocations * PRICES.lambda_request
        + work.gb_seconds * PRICES.lambda_gb_second
        + work.emails * PRICES.ses_email,
        detail=f"{calls:.1f} AWS calls + {work.invocations:.1f} Lambda invocations + {reviewers} emails",
    )


def _step_functions(reviewers: int, work: LambdaWork) -> Side:
    """Step Functions: the same Lambda work (invocations, compute, emails) and the action's own writes,
    with the approval state kept by the service: transitions instead of our tables and queue."""
    from lockgate_infra.cost.prices import PRICES

    action_writes = 3  # the refund transaction (2 units per item, 1 item) and its ledger record
    sfn_invocations = work.invocations  # notify, page, decision (SendTaskSuccess from the callback), execute
    return Side(
        requests=SFN_TRANSITIONS
        + 2
        + sfn_invocations
        + action_writes
        + reviewers,  # + Start, SendTaskSuccess
        dollars=SFN_TRANSITIONS * PRICES.step_functions_transition
        + action_writes * PRICES.dynamodb_write_unit
        + sfn_invocations * PRICES.lambda_request
        + work.gb_seconds * PRICES.lambda_gb_second
        + work.emails * PRICES.ses_email,
        detail=f"{SFN_TRANSITIONS} transitions + StartExecution + SendTaskSuccess + {sfn_invocations:.1f} "
        f"Lambda invocations + {reviewers} emails",
    )


def _executor_only(meter: Any, process: Any) -> Any:
    """Time and meter only the worker's approval events (the executor), not the agent runs."""
    timed = meter.timed("executor", process)

    def run(pk: str, *args: Any, **kwargs: Any) -> Any:
        return (timed if pk.startswith("approval#") else process)(pk, *args, **kwargs)

    return run


def render(ours: Side, sfn: Side, facts: dict[str, float]) -> str:
    """The table and the ratio."""
    return "\n".join(
        [
            f"Per approved action ({facts['approved']:.0f} measured; "
            f"{facts['write_units']:.1f} write / {facts['read_units']:.1f} read units on our side)",
            "",
            "| design | AWS requests | dollars | made of |",
            "|---|---|---|---|",
            f"| Lockgate (tables + queue) | {ours.requests:.1f} | ${ours.dollars:.7f} | {ours.detail} |",
            f"| Step Functions waitForTaskToken | {sfn.requests:.1f} | ${sfn.dollars:.7f} | {sfn.detail} |",
            "",
            f"Ratio Lockgate / Step Functions: requests {ours.requests / sfn.requests:.2f}, "
            f"dollars {ours.dollars / sfn.dollars:.2f}",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    """Command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--actions", type=int, default=6)
    args = parser.parse_args(argv)
    logging.disable(logging.CRITICAL)
    ours, sfn, facts = measure(args.actions)
    print(render(ours, sfn, facts))
    print(json.dumps({"ours_usd": ours.dollars, "sfn_usd": sfn.dollars}), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
