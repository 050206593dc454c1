"""The load run on the embedded stack, small: its checks are correctness (stored once, processed
once, duplicates 200, forgeries 401, every phase starting from an empty queue and the same tables),
so they are asserted; its timings, and so whether the target is met, never are."""

from __future__ import annotations

import io

import pytest

from benchmarks import load

pytestmark = pytest.mark.slow  # fuzzing/chaos/load/benchmarks: `make check`, not `make test`


def test_concurrent_senders_with_dups_and_forgeries_store_and_process_each_valid_delivery_once() -> None:
    # Given 120 requests (duplicates and forgeries among them) from 6 concurrent senders
    requests = load.traffic(120)
    assert {r.kind for r in requests} == {"new", "duplicate", "forged"}
    out = io.StringIO()

    # When three repeats send them through the local stack's gateway to each receiver in turn, the
    # worker draining Lockgate's queue after each of its phases
    status = load.run(deliveries=120, senders=6, repeats=3, out=out)

    # Then every check holds in all six Lockgate phases, every phase began alike, the order alternated,
    # and the exit code is the target's verdict
    report = out.getvalue()
    assert "FAIL" not in report, report
    assert report.count("  ok   ") == 6
    assert "queue depth 0" in report and "6 Lockgate phases checked" in report
    assert "repeat 2: baseline core → lockgate core → lockgate handler" in report
    assert "| lockgate core |" in report and "| baseline core |" in report
    assert status == (0 if report.rstrip().endswith("— met") else 1)
