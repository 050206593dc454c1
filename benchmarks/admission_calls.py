"""DynamoDB calls per model call that the budget and the rate limits add, measured on moto.

The agent loop answers the same events through the real SDK and the local stub in several
set-ups over one in-process moto (template.yaml's State table), counting every DynamoDB request
(botocore ``before-send``) on the one client all of them share. Each event is a run of
``CALLS_PER_RUN`` model calls (three tool turns with a read-only tool, then the answer), the
shape of the example's runs:

- **no controls**: the loop alone (its run records: open, steps, finish).
- **allowance (as deployed)**: daily caps (global + the task's own) and rate buckets (the
  event's source and the model), the run's next five calls admitted by one
  ``TransactWriteItems`` and settled by one when the run stops (``lockgate.capacity.allowance``).
- **one call per admission**: the same gate, one transaction before each call and one after
  (the design before the allowance; the loop's ``calls_ahead=0``).
- **one by one**: the gate's own updates sent separately, per call (the design before the
  gate): a conditional update per bucket, one to hold on the day's spend item, one to settle.

Added calls per model call = (set-up - no controls) / model calls; target **<= 0.5** for the
allowance (one write before a run of four calls and one after). The day's first runs (which
open the counters) are warm-up and not counted. The circuit breaker's reads are not budget or
rate limit; they are shown on their own line.

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
from lockgate.shards import Spreader

TARGET = 0.5
CALLS_PER_RUN = 4
MODEL, SOURCE, TASK = "claude-haiku-4-5", "helpdesk", "triage"
DEPLOYED = "allowance (as deployed)"


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
        self.spread = Spreader()  # a run's shard position, as the gate gives one

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

    def admit_ahead(self, task: str, scopes: list[str], estimate_usd: float, tokens: int, deadline: float,
                    **_: Any) -> Any:  # fmt: skip
        """One call per admission, whatever is asked: this design had no allowance."""
        from lockgate.capacity.gate import Ahead

        return Ahead(self.admit(task, scopes, estimate_usd, tokens, deadline), 1)

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
    from lockgate_infra.stub.server import StubAnthropic

    with StubAnthropic(Scripted([]), min_cacheable_tokens=0) as stub:
        stub.set_model(_answer)
        yield stub


def _answer(request: dict[str, Any]) -> Any:
    """Three turns that read a note, then the answer: CALLS_PER_RUN model calls per run."""
    from lockgate_infra.stub.replies import Reply

    turns = sum(1 for m in request["messages"] if m["role"] == "assistant")
    if turns < CALLS_PER_RUN - 1:
        use = {"type": "tool_use", "id": f"t{turns}", "name": "read_note", "input": {"n": turns}}
        return Reply([use], stop_reason="tool_use")
    return Reply([{"type": "text", "text": "Thanks, noted."}])


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
    """The one task every event runs: a read-only tool, CALLS_PER_RUN model calls."""
    from pydantic import BaseModel

    from lockgate import RunFacts, Start, Task, Tool

    class NoteArgs(BaseModel):
        n: int

    note = Tool("read_note", "Read a note.", NoteArgs, lambda a, ctx: {"note": a.n}, lambda a: f"note {a.n}")
    return Task(
        name=TASK,
        source=SOURCE,
        event_type="*",
        system="Classify the customer's email.",
        tools=[note],
        start=lambda event, services: Start("Classify this email: where is my order?", RunFacts(values={})),
        model=MODEL,
        max_output_tokens=256,
    )


def _model(stub: Any, clock: Any, log: Any) -> Any:
    """The model client over the real SDK, aimed at the stub."""
    from lockgate.model.client import ModelClient
    from lockgate_infra.stub.client import stub_client

    return ModelClient(lambda: stub_client(stub.base_url, "bench"), clock, log)


def _setups(db: Any, table: str, clock: Any, metrics: Any, log: Any) -> dict[str, dict[str, Any]]:
    """Each set-up's controls, as keyword arguments of the loop."""
    from lockgate.capacity.breaker import CircuitBreaker
    from lockgate.capacity.gate import Gate
    from lockgate.capacity.ratelimit import Bucket, RateLimiter
    from lockgate.capacity.spend import SpendCaps
    from lockgate.runtime.worker import BREAKER_CACHE_SECONDS

    spend = SpendCaps(
        db, table, clock, global_cap_usd=1_000.0, task_caps={TASK: 500.0}, metrics=metrics, log=log
    )
    limits = {f"model#{MODEL}": Bucket(100_000, 100_000_000), f"source#{SOURCE}": Bucket(100_000)}
    limiter = RateLimiter(db, table, clock, limits=limits, metrics=metrics, log=log)
    return {
        "no controls": {},
        DEPLOYED: {"gate": Gate(db, clock, spend=spend, limiter=limiter)},
        "one call per admission": {"gate": Gate(db, clock, spend=spend, limiter=limiter), "calls_ahead": 0},
        "one by one (before the gate)": {"gate": OneByOne(db, clock, spend, limiter), "calls_ahead": 0},
        "allowance + circuit breaker": {
            "gate": Gate(db, clock, spend=spend, limiter=limiter),
            # As deployed: a closed read is trusted for a few seconds (lockgate.runtime.worker).
            "breaker": CircuitBreaker(
                db, table, clock, closed_cache_seconds=BREAKER_CACHE_SECONDS, metrics=metrics, log=log
            ),
        },
    }


def _loop(
    model: Any, db: Any, table: str, clock: Any, log: Any, metrics: Any, controls: dict[str, Any]
) -> Any:
    """The agent loop with its run records on the State table, and one set-up's controls."""
    from lockgate.actions.ledger import Ledger
    from lockgate.agent.loop import AgentLoop
    from lockgate.agent.runs import RunStore
    from lockgate.model.price_table import PriceTable

    return AgentLoop(
        model=model,
        prices=PriceTable.published(),
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
    deployed, per_call = added(results, DEPLOYED), added(results, "one call per admission")
    old = added(results, "one by one (before the gate)")
    with_controls = results[DEPLOYED].per_model_call / base.per_model_call
    lines += [
        "",
        f"added by budget + rate limits ({DEPLOYED}, runs of {CALLS_PER_RUN} calls): {deployed:.2f} calls "
        f"per model call, target <= {TARGET}: " + ("MET" if deployed <= TARGET else "MISSED"),
        f"ratio with controls / no controls (all DynamoDB calls per model call): {with_controls:.2f}",
        f"ratio allowance / one call per admission (added calls): {deployed / per_call:.2f} "
        f"({deployed:.2f} vs {per_call:.2f}); / one by one: {deployed / old:.2f} (vs {old:.2f})",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Print the comparison; --json for machine-readable output."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--events", type=int, default=50, help=f"runs per set-up ({CALLS_PER_RUN} model calls each)"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    results = measure(args.events)
    figures = {n: {"per_model_call": f.per_model_call, **f.operations} for n, f in results.items()}
    print(json.dumps(figures) if args.json else render(results))
    return 0 if added(results, DEPLOYED) <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
