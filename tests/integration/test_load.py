"""The load run on the embedded stack, small: its checks are correctness (stored once, processed
once, duplicates 200, forgeries 401), so they are asserted; its timings never are."""

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

    # When they go through the local stack's gateway to the receiver, then the worker drains the queue
    status = load.run(deliveries=120, senders=6, out=out)

    # Then every check holds and the report compares the receivers
    report = out.getvalue()
    assert status == 0, report
    assert "FAIL" not in report
    assert report.count("  ok   ") == 5
    assert "| lockgate core |" in report and "| baseline core |" in report
