"""The chaos harness, short: seeded faults at every AWS and model call, then the invariants.

Each seed sends helpdesk emails (duplicates, replays, forgeries) through the receiver, the worker
with the shop's agent task, the approval desk and the housekeeping jobs, with throttling, 5xx,
timeouts before and after the write applied, crashes after side effects, mid-processing
redelivery and clock skew injected; it runs until nothing is left to do and judges the end state.
`make chaos SEEDS=50` runs many more.
"""

from __future__ import annotations

import pytest

from lockgate_infra.chaos.faults import Rates
from lockgate_infra.chaos.run import run_seed, table

pytestmark = pytest.mark.slow  # fuzzing/chaos/load/benchmarks: `make check`, not `make test`


@pytest.mark.parametrize("seed", [11, 12])
def test_given_seeded_faults_everywhere_when_driven_to_quiescence_then_no_invariant_is_violated(
    seed: int,
) -> None:
    row = run_seed(seed, events=12)
    # The faults really happened: every kind the harness injects, across the calls of one seed
    assert sum(row.faults.values()) >= 10, table([row])
    assert row.tally.duplicates_absorbed > 0 and row.tally.redeliveries > 0
    # And the end state holds every invariant
    assert row.verdict.violations == [], table([row])
    assert row.verdict.processed + row.verdict.set_aside > 0
    assert row.verdict.emails > 0  # the agent really acted: replies went out despite the faults


def test_given_a_ledger_that_forgets_when_faults_force_replays_then_the_invariants_report_duplicates(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a broken ledger: every call runs its effect, each time under a new idempotency key
    import uuid

    from lockgate.actions import ledger

    monkeypatch.setattr(ledger.Ledger, "_begin", lambda self, *args: None)
    monkeypatch.setattr(ledger, "idempotency_key_for", lambda op_key: f"lg_{uuid.uuid4().hex}")
    monkeypatch.setattr(ledger.Ledger, "_complete", lambda self, *args: None)
    # When crashes after side effects force replays
    row = run_seed(6, events=12, rates=Rates(crash_after_effect=0.6))
    # Then the harness sees effects happen twice (it can fail; it is not a formality)
    assert any("refunds of" in v or "emails to" in v for v in row.verdict.violations), table([row])
