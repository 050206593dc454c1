"""One MCP chaos seed: the tickets workflow against the real example MCP server, in-process, under
the server's faults (crash after acting, slow answers, lost sessions, outages, a definition changed
mid-run) and the harness's own (worker crashes, redeliveries, AWS and model faults, clock skew);
then the invariants, judged from the server's record: ``python -m lockgate_infra.chaos --mcp``.

Odd seeds speak the sessionless protocol, even seeds the handshake era's (sessions, which a
restart loses). The config is the shipped lockgate.toml's, with the server's address and token
from the environment, a short read timeout (a slow answer costs little), and a business identity
on ``issue_credit`` (one credit per ticket, ever) so that invariant has something to hold.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from lockgate.clock import FixedClock
from lockgate.config import LockgateConfig
from lockgate_infra.chaos.drive import Tally, drive, seeded
from lockgate_infra.chaos.faults import FaultPlan, Rates, inject_aws
from lockgate_infra.chaos.housekeeping import housekeeping
from lockgate_infra.chaos.invariants import settled
from lockgate_infra.chaos.mcp_faults import READ_TIMEOUT_SECONDS, Change, McpRates, McpWeather, inject_mcp
from lockgate_infra.chaos.mcp_invariants import McpFindings, judge_mcp
from lockgate_infra.chaos.mcp_traffic import model_for_both, ticket_edits, ticket_traffic, tickets
from lockgate_infra.chaos.run import START, account
from lockgate_infra.chaos.world import chaos_config
from lockgate_infra.mcp_example import EXAMPLE_TOKEN, Desk, McpExample

ERAS = ("2025-11-25", "2026-07-28")  # the handshake era's sessions (even seeds), and sessionless


@dataclass
class McpRow:
    """One seed's line of the table."""

    seed: int
    events: int
    era: str
    faults: Counter[str]
    tally: Tally
    verdict: McpFindings
    change: Change | None


def mcp_config(era: str) -> LockgateConfig:
    """The chaos config with the tickets server's run settings."""
    return chaos_config(
        {
            "credential": "env:TICKETS_MCP_TOKEN",
            "protocol": era,
            "read_timeout_seconds": READ_TIMEOUT_SECONDS,
            "tools": {"issue_credit": {"identity": ["ticket_id"]}},
        }
    )


def run_mcp_seed(
    seed: int, events: int = 16, rates: Rates | None = None, mcp_rates: McpRates | None = None
) -> McpRow:
    """One seeded run of the tickets workflow on a fresh moto account and a fresh example server."""
    from tickets.model import scripted_model as tickets_model

    from shop.model import scripted_model as shop_model

    plan, clock = FaultPlan(seed, rates or Rates()), FixedClock(START)
    sends = ticket_traffic(seeded(seed), events)
    era = ERAS[seed % 2]
    config = mcp_config(era)
    writes = frozenset(n for n, t in config.mcp["tickets"].tools.items() if t.risk in ("act", "approval"))
    model = model_for_both(shop_model(), tickets_model())
    with McpExample(desk=Desk(tickets(), clock=clock.now)) as server:
        environ = {"TICKETS_MCP_URL": server.url, "TICKETS_MCP_TOKEN": EXAMPLE_TOKEN}
        weather = McpWeather(seed, plan, server, writes, mcp_rates or McpRates())
        with account(plan, clock, config=config, environ=environ, model=model) as world:
            world.mcp = server
            with inject_aws(plan), inject_mcp(weather):
                sweep, *others = housekeeping(world)
                tally = drive(
                    world, plan, sends, [sweep, *others], racing=sweep, edits=ticket_edits, weather=weather
                )
            weather.settle()
            verdict = judge_mcp(world, server, weather.change, skew=plan.rates.clock_skew_seconds)
            settled(verdict, world, sends)
        fired = Counter(f"mcp-{fault.kind}" for fault in server.faults.fired)
    return McpRow(seed, events, era, plan.injected + fired, tally, verdict, weather.change)


COLUMNS: tuple[tuple[str, Callable[[Counter[str]], int]], ...] = (
    ("calls", lambda c: sum(n for k, n in c.items() if k.startswith("call:"))),
    ("effects", lambda c: sum(n for k, n in c.items() if k.startswith("effect:"))),
    ("approved effects", lambda c: c["effects approved"]),
    ("edited", lambda c: c["effects of an edit"]),
    ("unknown→find_effect", lambda c: c["unknown settled by find_effect"]),
    (
        "unknown→person",
        lambda c: c["unknown settled by a person: happened"] + c["unknown settled by a person: did not"],
    ),
    ("not sent", lambda c: c["not sent: server down"] + c["not sent: definition changed"]),
)


def mcp_table(rows: Sequence[McpRow]) -> str:
    """The report: one line per seed, then the totals."""
    kinds = sorted({kind for row in rows for kind in row.faults})
    head = ["seed", "era", "events", "posts", *kinds, "redeliveries", *(n for n, _ in COLUMNS)]
    head += ["edits refused", "changed", "unhandled", "violations"]
    lines = [" | ".join(head), " | ".join("---" for _ in head)]
    for row in rows:
        t, v = row.tally, row.verdict
        cells = [row.seed, row.era, row.events, t.posts, *(row.faults.get(k, 0) for k in kinds)]
        cells += [t.redeliveries, *(count(v.counts) for _, count in COLUMNS)]
        cells += [t.choices.edits_refused, row.change.tool if row.change else "-"]
        cells += [sum(t.unhandled.values()), len(v.violations)]
        lines.append(" | ".join(str(c) for c in cells))
    faults = sum(sum(row.faults.values()) for row in rows)
    violations = sum(len(row.verdict.violations) for row in rows)
    events = sum(row.events for row in rows)
    calls = sum(COLUMNS[0][1](row.verdict.counts) for row in rows)
    lines.append(
        f"\n{len(rows)} seeds, {events} events, {calls} MCP calls, {faults} faults injected, "
        f"{violations} violations"
    )
    return "\n".join(lines)
