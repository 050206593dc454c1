"""DynamoDB calls per model call that the budget and the rate limits add, measured on moto.

The agent loop answers the same events through the real SDK and the local stub in three set-ups
over one in-process moto (template.yaml's State table), counting every DynamoDB request
(botocore ``before-send``) on the one client all of them share:

- **no controls**: the loop alone (its run records: open, step, finish).
- **gate**: daily caps (global + the task's own) and rate buckets (the event's source and the
  model), admitted as Lockgate does: one ``TransactWriteItems`` before the call, one after
  (``lockgate.capacity.gate``).
- **one by one**: the gate's own updates sent separately, as before the gate: a conditional
  update per bucket, one per counter to hold, one per counter to settle.

Added calls per model call = (set-up - no controls) / model calls; target **<= 2**. The day's
first calls (which open the counters) are warm-up and not counted. The circuit breaker's read
(one ``GetItem`` per call) is not budget or rate limit; it is shown on its own line.

Run: ``python -m benchmarks.admission_calls [--events 50]``; exits non-zero over the target.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from benchmarks.moto_counting import CallCounter, moto_stack, quiet_logger

TARGET = 2
MODEL, SOURCE, TASK = "claude-haiku-4-5", "helpdesk", "triage"


@dataclass
class Figures:
    """What one set-up cost over the measured events."""

    name: str
    model_calls: int = 0
    dynamodb_calls: int = 0
    operations: Counter[str] = field(default_factory=Counter)

    @property
    def per_model_call(self) -> float:
        return self.dynamodb_calls / self.model_calls if self.model_calls else 0.0


class OneByOne:
    """The gate's own holds and takes, each sent as a call of its own (the design before the gate)."""

    def __init__(self, db: Any, clock: Any, spend: Any, limiter: Any) -> None:
        self.db, self.clock, self.spend, self.limiter = db, clock, spend, limiter

    def admit(self, task: str, scopes: list[str], estimate_usd: float, tokens: int, deadline: float) -> Any:
        from lockgate.capacity.ratelimit import Take

        now = self.clock.now()
        for scope in scopes:  # the buckets are far from their limits here: no waits
            take = self.limiter.plan(scope, tokens, now)
            if isinstance(take, Take) and self._sent(take.update) is None:
                self.limiter.taken(take)
        holds = self.spend.holds(task, estimate_usd, now, frozenset())
        for hold in holds:
            refused = self._sent(hold.update)
            if refused is not None:  # the day's first hold opens its counter; near the cap: no margin
                self.spend.hold_refused(hold, refused.get("Item"), now)
                (again,) = [
                    h
                    for h in self.spend.holds(task, estimate_usd, now, frozenset([hold.counter]))
                    if h.counter == hold.counter
                ]
                self._sent(again.update)
        return self.spend.reservation(task, holds)

    def settle(self, reservation: Any, actual_usd: float) -> None:
        for update in self.spend.settle_updates(reservation, actual_usd):
            self._sent(update)

    def _sent(self, update: dict[str, Any]) -> dict[str, Any] | None:
        """One UpdateItem; the refusal's response (ALL_OLD) when its condition failed, else None."""
        from botocore.exceptions import ClientError

        from lockgate.dynamo import conditional_failed

        try:
            self.db.update_item(**update)
        except ClientError as exc:
            if not conditional_failed(exc):
                raise
            return dict(exc.response)
        return None


@contextmanager
def _stub() -> Iterator[Any]:
    from lockgate_infra.stub.models import Scripted
    from lockgate_infra.stub.replies import Reply
    from lockgate_infra.stub.server import StubAnthropic

    with StubAnthropic(Scripted([]), min_cacheable_tokens=0) as stub:
        stub.set_model(lambda request: Reply([{"type": "text", "text": "Thanks, noted."}]))
        yield stub


def measure(events: int = 50, warmup: int = 2) -> dict[str, Figures]:
    """Run ``events`` events through each set-up; count the DynamoDB calls of the measured ones."""
    from lockgate.clock import SystemClock
    from lockgate.telemetry import CountingMetrics

    log, task = quiet_logger(), _task()
    results: dict[str, Figures] = {}
    with moto_stack() as (session, names), _stub() as stub:
        db, table, clock = session.client("dynamodb"), names["StateTable"], SystemClock()
        metrics = CountingMetrics()
        counter = CallCounter()
        counter.attach(db)
        model = _model(stub, clock, log)
        for name, controls in _setups(db, table, clock, metrics, log).items():
            loop = _loop(model, db, table, clock, log, metrics, controls)
            figures = Figures(name)
            for n in range(warmup + events):
                calls_before, ops_before, stub_before = counter.total, Counter(counter.operations), stub.calls
                loop.run(task, _event(f"{name}-{n}"), clock.now() + 600)
                if n < warmup:
                    continue
                figures.model_calls += stub.calls - stub_before
                figures.dynamodb_calls += counter.total - calls_before
                figures.operations.update(counter.operations - ops_before)
            results[name] = figures
    return results


def _task() -> Any:
    """The one task every event runs: a single model call, no tools."""
    from lockgate.actions.tools import RunFacts
    from lockgate.agent.tasks import Start, Task

    return Task(
        name=TASK,
        source=SOURCE,
        event_type="*",
        system="Classify the customer's email.",
        tools=[],
        start=lambda event, services: Start("Classify this email: where is my order?", RunFacts(values={})),
        model=MODEL,
        max_output_tokens=256,
    )


def _model(stub: Any, clock: Any, log: Any) -> Any:
    """The model client over the real SDK, aimed at the stub."""
    import anthropic

    from lockgate.model.client import ModelClient

    return ModelClient(
        lambda: anthropic.Anthropic(api_key="bench", base_url=stub.base_url, max_retries=0), clock, log
    )


def _setups(db: Any, table: str, clock: Any, metrics: Any, log: Any) -> dict[str, dict[str, Any]]:
    """Each set-up's controls, as keyword arguments of the loop."""
    from lockgate.capacity.breaker import CircuitBreaker
    from lockgate.capacity.gate import Gate
    from lockgate.capacity.ratelimit import Bucket, RateLimiter
    from lockgate.capacity.spend import SpendCaps

    spend = SpendCaps(
        db, table, clock, global_cap_usd=1_000.0, task_caps={TASK: 500.0}, metrics=metrics, log=log
    )
    limits = {f"model#{MODEL}": Bucket(100_000, 100_000_000), f"source#{SOURCE}": Bucket(100_000)}
    limiter = RateLimiter(db, table, clock, limits=limits, metrics=metrics, log=log)
    return {
        "no controls": {},
        "gate (budget + rate limits)": {"gate": Gate(db, clock, spend=spend, limiter=limiter)},
        "one by one (before the gate)": {"gate": OneByOne(db, clock, spend, limiter)},
        "gate + circuit breaker": {
            "gate": Gate(db, clock, spend=spend, limiter=limiter),
            "breaker": CircuitBreaker(db, table, clock, metrics=metrics, log=log),
        },
    }


def _loop(
    model: Any, db: Any, table: str, clock: Any, log: Any, metrics: Any, controls: dict[str, Any]
) -> Any:
    """The agent loop with its run records on the State table, and one set-up's controls."""
    from lockgate.actions.ledger import Ledger
    from lockgate.agent.loop import AgentLoop
    from lockgate.agent.runs import RunStore

    return AgentLoop(
        model=model,
        runs=RunStore(db, table, clock),
        ledger=Ledger(db, table, clock),
        clock=clock,
        log=log,
        metrics=metrics,
        **controls,
    )


def _event(delivery_id: str) -> Any:
    """One email being processed, as the worker hands it to the loop."""
    from lockgate.inbox.routing import InboxEvent

    return InboxEvent.claimed(SOURCE, delivery_id, "email.received", b"{}")


def added(results: dict[str, Figures], name: str) -> float:
    """DynamoDB calls per model call that a set-up adds over no controls."""
    return results[name].per_model_call - results["no controls"].per_model_call


def render(results: dict[str, Figures]) -> str:
    """The table, the added calls against the target, and the ratios."""
    base = results["no controls"]
    lines = [f"{'set-up':<32} {'model calls':>11} {'DynamoDB/model call':>20} {'added':>6}  operations"]
    for figures in results.values():
        ops = ", ".join(
            f"{op.split('.', 1)[1]} x{count / figures.model_calls:g}"
            for op, count in sorted(figures.operations.items())
        )
        lines.append(
            f"{figures.name:<32} {figures.model_calls:>11} {figures.per_model_call:>20.2f} "
            f"{added(results, figures.name):>6.2f}  {ops}"
        )
    gate, old = added(results, "gate (budget + rate limits)"), added(results, "one by one (before the gate)")
    with_controls = results["gate (budget + rate limits)"].per_model_call / base.per_model_call
    lines += [
        "",
        f"added by budget + rate limit (gate): {gate:.2f} calls per model call, target <= {TARGET}: "
        + ("MET" if gate <= TARGET else "MISSED"),
        f"ratio with controls / no controls (all DynamoDB calls per model call): {with_controls:.2f}",
        f"ratio gate / one by one (added calls): {gate / old:.2f} ({gate:.2f} vs {old:.2f})",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Print the comparison; --json for machine-readable output."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=50, help="events per set-up (one model call each)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    results = measure(args.events)
    if args.json:
        print(
            json.dumps({n: {"per_model_call": f.per_model_call, **f.operations} for n, f in results.items()})
        )
    else:
        print(render(results))
    return 0 if added(results, "gate (budget + rate limits)") <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
