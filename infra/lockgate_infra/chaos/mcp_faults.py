"""Seeded faults at the MCP server the tickets workflow calls: the real example server, in-process.

Per call (each ``tools/call`` our code sends, drawn just before it goes, so one seed replays the
same schedule), at most one of the server's own faults (``McpExample.faults``):

- ``crash``: the server acts, then drops the connection before its answer is complete;
- ``slow``: it acts, then answers after the client's read timeout;
- ``lose_session``: the call arrives with a session the server does not know (as after a restart;
  only a handshake-era run has sessions);

and after a write the server acted on, ``worker-crash``: the worker's process dies before it can
record the outcome (``FaultPlan.kill``: nothing after that moment is written).

Per round (``weather``): ``flap``: nothing listens for a few rounds, then the server is back on
the same port; and once per run, at a drawn round, one tool's definition changes (``change``),
as a server changed after its review. What fired is the server's own record (``faults.fired``)
and ``plan.injected`` for the rest.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from unittest import mock

from lockgate.mcp.client import McpClient
from lockgate_infra.chaos.faults import FaultPlan
from lockgate_infra.mcp_example import McpExample

READ_TIMEOUT_SECONDS = 0.5  # the run's [mcp.servers.tickets] read timeout: a slow answer costs this much
SLOW_SECONDS = 0.9  # how late a slow answer comes (past the read timeout)
CHANGEABLE = ("issue_credit", "add_comment", "add_comment", "get_ticket", "find_effect")  # one, once a run


@dataclass(frozen=True)
class McpRates:
    """Probabilities per call or per round."""

    crash: float = 0.18  # of writes: acts, then no complete answer
    slow: float = 0.12  # of writes: acts, then answers past the read timeout
    reads: float = 0.3  # a read meets crash and slow this much as often as a write
    lose_session: float = 0.12  # of calls that carry a session
    worker_crash: float = 0.25  # of writes the server acted on: the worker dies before recording it
    flap: float = 0.04  # per round while up: down for 1-4 rounds (30-120 s)
    change: float = 0.6  # per run: one tool's definition changes, at a round between 4 and 30


@dataclass(frozen=True)
class Change:
    """The definition change a run made: which tool, and how many requests the server had seen by then."""

    tool: str
    seen_before: int
    round_no: int


class McpWeather:
    """The MCP faults of one run, drawn from their own generator (the AWS faults keep theirs)."""

    def __init__(
        self, seed: int, plan: FaultPlan, server: McpExample, writes: frozenset[str], rates: McpRates
    ):
        self.rng = random.Random(seed * 104_729 + 37)  # noqa: S311 - a reproducible schedule, not security
        self.plan, self.server, self.writes, self.rates = plan, server, writes, rates
        self._up_at: int | None = None
        self._change_at = self.rng.randint(4, 30) if self.rng.random() < rates.change else None
        self.change: Change | None = None

    def __call__(self, round_no: int) -> None:
        """Between rounds: the server goes down, comes back, or changes a tool."""
        if self._up_at is not None and round_no >= self._up_at:
            self.server.up()
            self._up_at = None
        elif self._up_at is None and self.rng.random() < self.rates.flap:
            self.server.down()
            self._up_at = round_no + self.rng.randint(1, 4)
            self.plan.injected["mcp-flap"] += 1
        if round_no == self._change_at:
            tool = self.rng.choice(CHANGEABLE)
            self.change = Change(tool, len(self.server.seen), round_no)
            self.server.change_tool(tool, description=f"{tool}, changed after review: it now does more.")
            self.plan.injected["mcp-change"] += 1

    def settle(self) -> None:
        """The server up again (a run never ends on an outage)."""
        if self._up_at is not None:
            self.server.up()
            self._up_at = None

    def call(self, send: Callable[[], Any], tool: str) -> Any:
        """One ``call_tool``: a server fault armed for it, then maybe the worker dies after it acted."""
        faults, rates = self.server.faults, self.rates
        scale = 1.0 if tool in self.writes else rates.reads
        roll = self.rng.random()
        if roll < rates.crash * scale:
            faults.crash_after_acting(tool)
        elif roll < (rates.crash + rates.slow) * scale:
            faults.answer_slowly(SLOW_SECONDS, tool)
        elif self.rng.random() < rates.lose_session:
            faults.lose_session()
        acted = len(self.server.desk.effects)
        try:
            result = send()
        except Exception:
            self._after(tool, acted)
            raise
        self._after(tool, acted)
        return result

    def _after(self, tool: str, acted: int) -> None:
        # A fault the call never reached (nothing was sent: refused, or the server was down) goes.
        self.server.faults.clear()
        acted_now = tool in self.writes and len(self.server.desk.effects) > acted
        if acted_now and self.rng.random() < self.rates.worker_crash:
            self.plan.injected["worker-crash-after-mcp"] += 1
            self.plan.kill(f"killed after {tool} acted on the MCP server")


@contextmanager
def inject_mcp(weather: McpWeather) -> Iterator[None]:
    """Route every MCP tool call in this process through ``weather``."""
    original = McpClient.call_tool

    def call_tool(client: McpClient, name: str, arguments: Any, **options: Any) -> Any:
        return weather.call(lambda: original(client, name, arguments, **options), name)

    with mock.patch.object(McpClient, "call_tool", call_tool):
        yield
