"""The load run on the embedded stack, small: its checks are correctness (stored once, processed
once, duplicates 200, forgeries 401, every phase starting from an empty queue and the same tables),
so they are asserted; its timings, and so whether the target is met, never are."""

from __future__ import annotations

import io

import pytest

from benchmarks import load
from benchmarks.load_faults import FaultRates

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


def test_in_rounds_with_faults_and_provider_retries_nothing_is_lost_or_doubled() -> None:
    # Given 300 requests in rounds of 100, the receivers' calls failing often (throttled or timed-out
    # puts, failed pointer sends) and the provider resending 5xx answers and some 200s it never saw
    faults = FaultRates(throttle=0.04, stored_then_timeout=0.03, send_fails=0.05, lost_ack=0.05)
    out = io.StringIO()

    # When one repeat sends them to each receiver, the worker draining Lockgate's queue between
    # rounds and the inbox sweep re-queueing what a fault left without a pointer
    status = load.run(deliveries=300, senders=4, repeats=1, out=out, rounds=100, faults=faults)

    # Then every check holds in both Lockgate phases: each valid delivery stored once and processed
    # once (done at its first attempt), every new one and every duplicate finally answered 200
    report = out.getvalue()
    assert "FAIL" not in report, report
    assert report.count("  ok   ") == 6 and "2 Lockgate phases checked" in report
    # And faults were injected, the provider resent, and the sweep re-queued the stranded deliveries
    assert "lockgate core: injected" in report and "provider resent 5xx" in report
    assert "inbox sweep" in report and "requeued" in report
    assert status == (0 if report.rstrip().endswith("— met") else 1)
