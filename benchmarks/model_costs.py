"""Dollars per 100 support-inbox events: no controls, then each cost control added in turn.

The shop's task answers a fixed set of customer emails (some of them the same words from the same
customer, as a busy inbox has) through the real loop, the real SDK and the local stub, which bills
prompt-cache writes and reads as the API does. Cost is the loop's own accounting of each run
(``run.totals``, priced by pricing.py), so response-cache hits count as free and each model is priced
at its own rates. Configurations, cumulative:

1. no controls: no prompt caching, no response cache, every call on the task's large model;
2. + prompt caching (5-minute markers on the system prompt and each step's newest message);
3. + response cache (the request extraction is answered from the State table when the text repeats);
4. + cheapest passing model for the extraction: each model is tried on every event and the cheapest
   whose answers all validate and pass the grounding and order checks is used (escalating to the
   large model when it gives up);
5. + every step through Message Batches (``Task(batch="every")``): each step of the tool loop is
   submitted as a batch, collected by the real collect-batches job from the stub's batch endpoints
   and replayed, with the recheck delay passing on the rig's clock between steps (so the 5-minute
   prompt cache has expired by the next step, as deployed). The extraction stays a direct call.
   Then the same with the prompt cache off: a cache write nobody reads only adds its 25%.

With the stub every model extracts the same way, so "passing" here shows the selection mechanism;
against real Claude the same script picks from real answers. Run: `python -m benchmarks.model_costs`.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from collections.abc import Callable
from typing import Any

from lockgate.agent.intake import take_in
from lockgate.agent.tasks import Task
from lockgate.clock import FixedClock
from lockgate.model.price_table import PriceTable
from lockgate_infra.evals.shoprig import Email, shop_rig

EVENTS = [
    Email("ada@example.com", "Where is my order A-1042?", "Hi, where is order A-1042? It has been a week."),
    Email("grace@example.com", "Broken teapot A-2001", "My order A-2001 arrived broken. Please refund $80."),
    Email("ada@example.com", "Returns", "How do I return the jacket from order A-1043?"),
    Email("grace@example.com", "Order A-2002", "When will A-2002 ship?"),
    Email("ada@example.com", "Where is my order A-1042?", "Hi, where is order A-1042? It has been a week."),
    Email("ada@example.com", "Payment", "Which payment methods do you take?"),
    Email("grace@example.com", "Order A-2002", "When will A-2002 ship?"),
    Email("ada@example.com", "Where is my order A-1042?", "Hi, where is order A-1042? It has been a week."),
]
CANDIDATES = ("claude-haiku-5-5", "claude-sonnet-5-5", "claude-opus-5-5")


@dataclasses.dataclass(frozen=True)
class Setting:
    """One configuration of the controls."""

    label: str
    cache_ttl: str
    response_cache: bool
    cheapest: bool
    batch: bool | str = False  # the task's ``batch`` setting


SETTINGS = (
    Setting("no controls", "off", False, False),
    Setting("+ prompt caching", "5m", False, False),
    Setting("+ response cache", "5m", True, False),
    Setting("+ cheapest passing model", "5m", True, True),
    Setting("+ every step batched", "5m", True, True, "every"),
    Setting("  the same, prompt cache off", "off", True, True, "every"),
)


def cheapest_passing(events: list[Email]) -> str:
    """The cheapest candidate whose extraction passes on every event (by output price, then input)."""
    from lockgate.model.client import ModelClient
    from shop.model import scripted_model

    shop_model = scripted_model()

    price = PriceTable.published().price
    for model in sorted(CANDIDATES, key=lambda m: (price(m).output, price(m).input)):
        with shop_rig(shop_model) as rig:
            intake = dataclasses.replace(rig.task.intake, models=(model,))  # type: ignore[arg-type]
            client = rig.loop._model  # the rig's ModelClient, straight to the stub
            assert isinstance(client, ModelClient)
            results = [
                take_in(intake, e.event(f"msg-pick-{n}", 0), rig.task.services, client, rig.clock.now() + 60)
                for n, e in enumerate(events)
            ]
        if all(not r.needs_person for r in results):
            return model
    return CANDIDATES[-1]


def measure(setting: Setting, events: list[Email], cheap_model: str | None = None) -> dict[str, Any]:
    """Answer every event under one setting; dollars from the runs' own totals."""
    from shop.model import scripted_model

    shop_model = scripted_model()

    def adapt(task: Task) -> Task:
        assert task.intake is not None
        models = (cheap_model, task.model) if setting.cheapest and cheap_model else (task.model,)
        intake = dataclasses.replace(task.intake, models=tuple(dict.fromkeys(models)))
        # The worker always has its response cache; a task marked fresh never uses it.
        fresh = not setting.response_cache
        return dataclasses.replace(
            task, cache_ttl=setting.cache_ttl, intake=intake, batch=setting.batch, fresh=fresh
        )

    # Batched steps are an hour or more apart: a clock the rig advances by the recheck delay.
    clock = FixedClock() if setting.batch else None
    batches = bool(setting.batch)
    with shop_rig(shop_model, adapt=adapt, batches=batches, clock=clock) as rig:
        usd, calls, hits, batched = 0.0, 0, 0, 0
        for n, email in enumerate(events):
            event = rig.answer(email, f"msg-cost-{n}")
            run = rig.runs.get(event.delivery.pk)
            assert run is not None and run.status == "completed", run and run.outcome
            usd += run.totals["cost_usd"]
            calls += sum(m["calls"] for m in run.totals["by_model"].values())
            hits += sum(m["cache_hits"] for m in run.totals["by_model"].values())
            batched += sum(m["batched"] for m in run.totals["by_model"].values())
    return {
        "setting": setting.label,
        "events": len(events),
        "usd_per_100": round(usd * 100 / len(events), 4),
        "model_calls": calls,
        "response_cache_hits": hits,
        "batched_calls": batched,
    }


def run_all(events: list[Email]) -> list[dict[str, Any]]:
    """Every setting, cumulative, on the same events."""
    cheap = cheapest_passing(events)
    rows = [measure(s, events, cheap) for s in SETTINGS]
    for setting, row in zip(SETTINGS, rows, strict=True):
        row["ratio"] = round(row["usd_per_100"] / rows[0]["usd_per_100"], 3)
        row["batch"] = setting.batch
        if setting.cheapest:
            row["extraction_model"] = cheap
    return rows


def render(rows: list[dict[str, Any]]) -> str:
    """The table and the headline ratios: every control that answers now, then every step batched."""
    lines = [f"{'setting':<28}{'$/100 events':>14}{'calls':>8}{'saved':>7}{'batched':>9}{'ratio':>8}"]
    for r in rows:
        lines.append(
            f"{r['setting']:<28}{r['usd_per_100']:>14.4f}{r['model_calls']:>8}"
            f"{r['response_cache_hits']:>7}{r['batched_calls']:>9}{r['ratio']:>8.3f}"
        )
    now = [r for r in rows if not r["batch"]][-1]
    lines.append(f"\nextraction model chosen: {now['extraction_model']}")
    lines.append(f"ratio of dollars, all controls / no controls: {now['ratio']:.3f}")
    batched = [r for r in rows if r["batch"]]
    if batched:
        lines.append("latency-tolerant, every step through Message Batches (each step waits >= 1 h):")
    for r in batched:
        lines.append(
            f"  {r['setting'].strip().removeprefix('+ ')}: {r['ratio']:.3f} of no controls,"
            f" {r['usd_per_100'] / now['usd_per_100']:.3f} x all controls"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None, run: Callable[[list[Email]], list[dict[str, Any]]] = run_all) -> int:
    """Print the comparison; --json for machine-readable output."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    rows = run(EVENTS)
    print(json.dumps(rows, indent=2) if args.json else render(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
