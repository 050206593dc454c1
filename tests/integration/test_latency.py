"""The latency benchmark on the embedded stack, small and with its modelled delays scaled down: its
checks are correctness (every email answered, stored once, done, replied to exactly once), so they
are asserted; its timings never are."""

from __future__ import annotations

import io

import pytest

from benchmarks import latency
from benchmarks.latency_report import Deployed
from lockgate_infra.local.stack import default_template_path
from lockgate_infra.local.template import LocalPlan

pytestmark = pytest.mark.slow  # fuzzing/chaos/load/benchmarks: `make check`, not `make test`


def test_emails_sent_steady_and_in_a_burst_are_each_replied_to_once_and_the_report_says_so() -> None:
    # Given a steady phase of 2 emails and a burst of ten times the rate, with the worker's event
    # source as deployed and every modelled AWS and model delay a twentieth of its figure
    out = io.StringIO()

    # When the latency benchmark sends them through the local stack's gateway
    status = latency.run(rates=[1.0], steady_seconds=2, burst_seconds=0.5, out=out, scale=0.05)

    # Then every check held in both phases: each email answered 200, stored once, done, and
    # replied to exactly once (the shop's SendEmail with the email's tag)
    report = out.getvalue()
    assert status == 0, report
    assert "| steady 1/s | 2 | 2 |" in report and "| burst 10/s | 5 | 5 |" in report
    assert report.count("| ok |") == 2 and "FAIL" not in report
    # And the report states the settings template.yaml deploys and the modelled figures with sources
    plan = LocalPlan.from_file(default_template_path())
    deployed = Deployed.from_plan(plan, latency.WORKER)
    assert f"MaximumConcurrency {deployed.maximum_concurrency}," in report
    assert f"WORKER_RECORD_CONCURRENCY {deployed.record_concurrency}," in report
    assert "single-digit millisecond" in report and "× 0.05: a smoke run" in report
