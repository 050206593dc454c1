"""The MCP chaos run, short: the tickets workflow against the real example MCP server in-process.

Each seed sends ``ticket.opened`` events (duplicates, replays, forgeries) through the receiver, the
worker with the tickets task, the approval desk (reviewers approve, reject or edit) and the jobs,
while the server crashes after acting, answers past the read timeout, loses sessions, goes down
for a while and changes a tool's definition, the worker is killed after a write acted, and every
AWS and model call can fail; then the end state is judged from the server's own record.
`make chaos MCP=1 SEEDS=20` runs many more.
"""

from __future__ import annotations

import pytest

from lockgate_infra.chaos.mcp_faults import McpRates
from lockgate_infra.chaos.mcp_run import mcp_table, run_mcp_seed

pytestmark = pytest.mark.slow  # fuzzing/chaos/load/benchmarks: `make check`, not `make test`


@pytest.mark.parametrize("seed", [13, 14])  # the sessionless protocol, and the handshake era's sessions
def test_given_mcp_server_faults_and_the_harness_faults_when_driven_to_quiescence_then_all_invariants_hold(
    seed: int,
) -> None:
    row = run_mcp_seed(seed, events=14)
    report = mcp_table([row])
    # The faults really happened, the server's among them (its own record of what fired)
    server_faults = sum(n for kind, n in row.faults.items() if kind.startswith("mcp-"))
    assert server_faults >= 3 and sum(row.faults.values()) >= 30, report
    assert row.tally.redeliveries > 0, report
    # And the end state holds every invariant
    assert row.verdict.violations == [], report
    # And the workflow really acted, each effect through a person, and unknown outcomes were settled
    counts = row.verdict.counts
    assert counts["effects approved"] >= 3, report
    settled = counts["unknown settled by find_effect"] + counts["unknown settled by a person: happened"]
    assert settled > 0, report


def test_given_a_ledger_that_forgets_when_the_worker_dies_after_each_write_then_the_resends_are_reported(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a broken ledger: it records nothing, so a call redelivered after a crash runs again
    from lockgate.actions import ledger

    monkeypatch.setattr(ledger.Ledger, "_begin", lambda self, *args: None)
    monkeypatch.setattr(ledger.Ledger, "_complete", lambda self, *args: None)
    # When the worker is killed after every write the server acted on
    row = run_mcp_seed(13, events=6, mcp_rates=McpRates(worker_crash=1.0))
    # Then the harness sees the same write sent again after it acted (it can fail; it is no formality)
    assert any("after the server had acted on it" in v for v in row.verdict.violations), mcp_table([row])
