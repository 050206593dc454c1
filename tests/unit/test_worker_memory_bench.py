"""benchmarks/worker_memory.py: the billing arithmetic (table-style), and the benchmark itself, small."""

from __future__ import annotations

import pytest

from benchmarks.worker_memory import Record, Sample, batch_seconds, dollars_per_event, measure, render
from lockgate_infra.cost.prices import PRICES

# Two records: one agent run (2 model calls, 10 AWS calls, 0.1 s CPU) and a duplicate pointer.
RUN, SKIPPED = Record(cpu_seconds=0.1, aws_calls=10, model_calls=2), Record(0.01, 1, 0)


@pytest.mark.parametrize(
    ("memory_mb", "side_by_side", "seconds"),
    [
        # one after another: every record's CPU and waits (4 s per model call, 8 ms per AWS call)
        (1769, False, 0.11 + (8 + 0.08) + 0.008),
        (1024, False, 0.11 * 1769 / 1024 + (8 + 0.08) + 0.008),  # 0.58 vCPU: CPU takes 1769/1024 as long
        # side by side: every record's CPU (one core), and the longest wait only
        (1769, True, 0.11 + 8.08),
        (256, True, 0.11 * 1769 / 256 + 8.08),
    ],
)
def test_a_batch_is_billed_its_cpu_and_its_waits_summed_or_the_longest(
    memory_mb: int, side_by_side: bool, seconds: float
) -> None:
    assert batch_seconds([RUN, SKIPPED], memory_mb, side_by_side) == pytest.approx(seconds)


def test_dollars_per_event_price_each_invocations_gb_seconds_and_request() -> None:
    # Given two events' records, in batches of two, at 512 MB side by side
    sample = Sample(events=2, records=[RUN, SKIPPED, RUN, SKIPPED])
    per_batch = (0.11 * 1769 / 512 + 8.08) * 0.5 * PRICES.lambda_gb_second + PRICES.lambda_request
    assert dollars_per_event(sample, 512, True, 2) == pytest.approx(2 * per_batch / 2)


@pytest.mark.slow
def test_the_benchmark_measures_the_example_and_judges_the_deployed_default() -> None:
    # Given a few example events through the worker as deployed
    sample = measure(events=4, traced_events=2)
    # Then it saw agent runs (model calls and AWS calls per record), CPU time, and memory
    assert any(r.model_calls > 0 and r.aws_calls > 0 for r in sample.records)
    assert all(r.cpu_seconds >= 0 for r in sample.records)
    assert (
        sample.init_rss_mb > 50 and sample.record_peak_mb > 0 and sample.process_rss_mb > sample.init_rss_mb
    )
    # And the report prints the table and a verdict for the template's defaults
    report, _met = render(sample)
    assert "| 512 MB | side by side |" in report and "Judged on batches of 5" in report
