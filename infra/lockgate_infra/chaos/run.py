"""Run seeds and print the table: ``python -m lockgate_infra.chaos --seeds 50``."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from lockgate.clock import FixedClock
from lockgate.config import LockgateConfig
from lockgate_infra.chaos.drive import Job, Tally, drive, seeded
from lockgate_infra.chaos.faults import FaultPlan, Rates, inject_aws
from lockgate_infra.chaos.housekeeping import housekeeping
from lockgate_infra.chaos.invariants import Findings, judge
from lockgate_infra.chaos.traffic import traffic
from lockgate_infra.chaos.world import World, build_world, chaos_config, sqs_on
from lockgate_infra.evals.shoprig import ROOT

START = 1_767_225_600.0  # 2026-01-01T00:00:00Z


@dataclass
class Row:
    """One seed's line of the table."""

    seed: int
    events: int
    faults: Counter[str]
    tally: Tally
    verdict: Findings
    extra: dict[str, Any] = field(default_factory=dict)


@contextmanager
def account(
    plan: FaultPlan,
    clock: FixedClock,
    *,
    config: LockgateConfig | None = None,
    environ: Mapping[str, str] | None = None,
    model: Callable[[dict[str, Any]], Any] | None = None,
) -> Iterator[World]:
    """A fresh moto account from template.yaml, the workflows seeded, the functions composed on it.

    ``config``: ``chaos_config()`` by default; ``environ``: variables added to the functions' (an
    MCP server's address and token); ``model``: the stand-in's answers (the shop's scripted model
    by default), with the plan's model faults in front.
    """
    import boto3

    from lockgate_infra.evals.rig import seed_workflows, workflow_environment
    from lockgate_infra.local.fidelity import embedded_aws
    from lockgate_infra.local.provision import create_resources
    from lockgate_infra.local.template import LocalPlan, load_template
    from lockgate_infra.stub import StubAnthropic, StubError
    from shop.model import scripted_model

    answer = model or scripted_model()
    config = config or chaos_config()

    def faulty(request: dict[str, Any]) -> Any:
        fault = plan.model_fault()
        if fault is None:
            return answer(request)
        status, kind, retry_after = fault
        headers = {"retry-after": str(retry_after)} if retry_after else {}
        return StubError(status, kind, "injected fault", headers)

    with embedded_aws(), sqs_on(clock), StubAnthropic(faulty) as stub:
        session = boto3.session.Session(region_name="us-east-1")
        local = LocalPlan.from_template(load_template(ROOT / "template.yaml"))
        names = create_resources(local, session)
        seed_workflows(config, session.client, names)  # every workflow's seed_local, the shop's orders
        workflows = workflow_environment(local, names, config.workflows.packages)
        world = build_world(
            session, names, plan, stub.base_url, clock, {**workflows, **(environ or {})}, config
        )
        world.stub = stub
        yield world


def run_seed(seed: int, events: int = 20, rates: Rates | None = None, jobs: Sequence[Job] = ()) -> Row:
    """One seeded run on a fresh moto account."""
    plan = FaultPlan(seed, rates or Rates())
    clock = FixedClock(START)
    sends = traffic(seeded(seed), events)
    with account(plan, clock) as world:
        with inject_aws(plan):
            sweep, *others = housekeeping(world)
            tally = drive(world, plan, sends, [sweep, *others, *jobs], racing=sweep)
        verdict = judge(world, sends, tally)
    return Row(seed, events, plan.injected, tally, verdict)


def table(rows: Sequence[Row]) -> str:
    """The report: one line per seed, then the totals."""
    kinds = sorted({kind for row in rows for kind in row.faults})
    head = [
        "seed",
        "events",
        "posts",
        *kinds,
        "redeliveries",
        "dups absorbed",
        "refunds",
        "emails",
        "set aside",
        "unhandled",
        "violations",
    ]
    lines = [" | ".join(head), " | ".join("---" for _ in head)]
    for row in rows:
        t, v = row.tally, row.verdict
        cells = [
            row.seed,
            row.events,
            t.posts,
            *(row.faults.get(k, 0) for k in kinds),
            t.redeliveries,
            t.duplicates_absorbed,
            v.refunds,
            v.emails,
            v.set_aside,
            sum(t.unhandled.values()),
            len(v.violations),
        ]
        lines.append(" | ".join(str(c) for c in cells))
    faults = sum(sum(row.faults.values()) for row in rows)
    violations = sum(len(row.verdict.violations) for row in rows)
    events = sum(row.events for row in rows)
    lines.append(f"\n{len(rows)} seeds, {events} events, {faults} faults injected, {violations} violations")
    return "\n".join(lines)
