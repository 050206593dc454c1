"""The benchmarks still run, with tiny N. Call counts are asserted (a correctness property);
timings never are."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import cold_start, receipt_calls

pytestmark = pytest.mark.slow  # fuzzing/chaos/load/benchmarks: `make check`, not `make test`


def test_receipt_calls_counts_two_calls_per_new_and_one_per_duplicate() -> None:
    # Given both receivers over moto, When a few new and duplicate GitHub deliveries are sent
    result = receipt_calls.measure(n_new=3, n_dup=3, warmup=1, n_other=1)

    # Then ours stores and queues a new delivery in 2 calls and answers a duplicate with 1
    assert result.ours.new.calls == [2, 2, 2]
    assert result.ours.new.operations == {"dynamodb.PutItem": 3, "sqs.SendMessage": 3}
    assert result.ours.duplicate.calls == [1, 1, 1]
    assert result.ours.duplicate.operations == {"dynamodb.PutItem": 3}
    # And the Powertools baseline does what its design implies: 4 calls new, 1 duplicate
    assert result.baseline.new.calls == [4, 4, 4]
    assert result.baseline.duplicate.calls == [1, 1, 1]
    for contender in (result.ours, result.baseline):
        assert contender.new.statuses == {200: 3}
        assert contender.duplicate.statuses == {200: 3}
        assert len(contender.new.seconds) == len(contender.new.backend_seconds) == 3
    assert set(result.other_paths) == {
        "new, body > item limit (S3)",
        "duplicate, body > item limit",
        "duplicate after 120 s, still waiting",
        "new, secretsmanager: secret, 300 s cache expired",
    }
    assert "ratio ours/baseline" in receipt_calls.render(result)


def test_cold_start_samples_both_handlers_and_reports_agent_dependencies() -> None:
    # Given fresh processes importing each handler once (no precompile: structure only)
    result = cold_start.measure(runs=1, warmup=0, compile_first=False, top=5)

    # Then each handler has one sample, the receiver loads none of the agent's dependencies
    assert len(result.bare) == len(result.receiver) == 1
    assert result.bare[0].seconds > 0 and result.receiver[0].seconds > 0
    assert result.agent_dependencies_loaded == set()
    # And importtime names our own modules, and the import's AWS calls are counted by operation
    assert any(line.module == "lockgate.inbox.receipt" for line in result.ours)
    assert 0 < len(result.extra) <= 5
    assert all("." in op and n > 0 for op, n in result.import_calls.items())
    assert "ratio receiver/bare" in cold_start.render(result)


def test_prompt_caching_benchmark_incremental_bills_less_than_todays_markers_warm_and_cold() -> None:
    from benchmarks.prompt_caching import BASELINE, FIVE, NEW, TODAY, measure

    rows = {(p, t): measure(p, t, rounds=1) for p in (BASELINE, TODAY, FIVE, NEW) for t in ("warm", "cold")}
    # the same conversations: output identical whatever the markers or the gaps between runs
    assert len({row.output_tokens for row in rows.values()}) == 1
    # no markers: nothing cached, and time between runs changes nothing
    assert rows[BASELINE, "warm"] == rows[BASELINE, "cold"] and rows[BASELINE, "warm"].cache_read == 0
    for timing in ("warm", "cold"):
        assert rows[NEW, timing].usd < rows[TODAY, timing].usd < rows[BASELINE, timing].usd
        assert rows[NEW, timing].input_usd < rows[TODAY, timing].input_usd
    # runs 6 minutes apart find the 5-minute entries expired: more written, less read
    assert rows[FIVE, "cold"].cache_write > rows[FIVE, "warm"].cache_write
    assert rows[FIVE, "cold"].cache_read < rows[FIVE, "warm"].cache_read
    # as shipped, the prefix goes to the hour once the worker has seen runs minutes apart: cheaper
    assert rows[NEW, "cold"].usd < rows[FIVE, "cold"].usd and rows[NEW, "warm"].usd <= rows[FIVE, "warm"].usd


def test_price_source_benchmark_measures_both_ways_side_by_side() -> None:
    from benchmarks import price_source

    found = price_source.measure(runs=1)
    assert found["library_bytes"] > 10 * found["table_bytes"] > 0
    assert "Run time / build time" in price_source.render(found)


def test_model_costs_benchmark_each_control_lowers_dollars_per_event() -> None:
    from benchmarks.model_costs import EVENTS, render, run_all

    # Given five events, the fifth the same email as the first
    rows = run_all(EVENTS[:5])
    # Then each control added costs less than the setting before it
    dollars = [row["usd_per_100"] for row in rows[:4]]
    assert dollars == sorted(dollars, reverse=True) and len(set(dollars)) == 4
    # And with the response cache on, answers came from it (the repeated email's extraction, and
    # screens of text already screened); without it none did; haiku passed and was chosen
    hits = [row["response_cache_hits"] for row in rows]
    assert hits[:2] == [0, 0] and all(h >= 1 for h in hits[2:]), hits
    assert rows[3]["extraction_model"] == "claude-haiku-5-5"
    assert "all controls / no controls" in render(rows)
    # And with every step batched, the loop's steps went through collected batches (the extraction
    # and the screens stay direct calls), below the no-controls cost; a prompt cache that expires
    # between batched steps only adds its write premium
    batched, cache_off = rows[4], rows[5]
    assert 0 < batched["batched_calls"] == cache_off["batched_calls"] < rows[3]["model_calls"]
    assert cache_off["usd_per_100"] < batched["usd_per_100"] < rows[0]["usd_per_100"]
    assert "every step through Message Batches" in render(rows)


def test_admission_calls_adds_two_writes_per_run_not_per_model_call() -> None:
    from benchmarks import admission_calls

    # Given the same runs (four model calls each) through the loop with no controls, the allowance
    # as deployed, one admission per call, and the controls one by one
    results = admission_calls.measure(events=3, warmup=1)
    # Then each run made four model calls, and the allowance adds one write before and one after
    assert {f.model_calls for f in results.values()} == {12}
    assert admission_calls.added(results, admission_calls.DEPLOYED) == 0.5
    gate_ops = results[admission_calls.DEPLOYED].operations - results["no controls"].operations
    # (the day's spend item and both buckets in one transaction; the settle one plain update)
    assert gate_ops == {"dynamodb.TransactWriteItems": 3, "dynamodb.UpdateItem": 3}
    # And the designs it replaces need two per call (one admission each) and four (one by one:
    # the day's spend item, each bucket, the settle)
    assert admission_calls.added(results, "one call per admission") == 2
    assert admission_calls.added(results, "one by one (before the gate)") == 4
    assert "target <= 0.5: MET" in admission_calls.render(results)


def test_approvals_benchmark_meters_each_approved_action_and_prices_step_functions() -> None:
    from benchmarks import approvals

    # Given two refunds that need a person, each approved through the real page and form
    ours, sfn, facts = approvals.measure(actions=2)
    # Then both were approved and executed, and our side made real AWS calls for each
    assert facts["approved"] == 2 and facts["write_units"] > 0
    assert ours.requests > 0 and ours.dollars > 0
    # And Step Functions is priced from its five transitions plus the same Lambda work
    assert sfn.dollars > approvals.SFN_TRANSITIONS * 0.025 / 1000
    assert "Ratio Lockgate / Step Functions" in approvals.render(ours, sfn, facts)


def test_worker_start_benchmark_pre_initialises_the_sdk_only_for_snapstart() -> None:
    from benchmarks import worker_start

    # Given one fresh worker process of each kind
    result = worker_start.measure(runs=1)
    # Then both started; the snapshot's init carried the SDK (so a restored environment need not)
    assert all(result[kind]["init"] > 0 and result[kind]["first"] > 0 for kind in ("cold", "snapshot"))
    assert result["snapshot"]["init"] > result["cold"]["init"]
    assert "Ratio new-environment start" in worker_start.render(result)


def test_cost_floor_reports_each_target_against_the_functions_as_deployed() -> None:
    from benchmarks import cost_floor
    from lockgate_infra.cost.meter import measure

    # Given a few example events metered through the functions as deployed
    usage = measure(events=4)
    text, met = cost_floor.render(usage)
    # Then every figure is shown next to its target with a verdict that matches the numbers
    worker = usage.per_event(usage.functions["worker"].aws_calls)
    units = usage.per_event(usage.write_units + usage.index_write_units)
    assert f"worker AWS calls per event: {worker:.1f}, target <= 35" in text
    assert f"(tables + indexes): {units:.1f}, target <= 45" in text
    assert usage.index_write_units > 0  # the inbox's and the ledger's indexes are written
    assert met == (worker <= 35 and units <= 45)


def test_a_benchmark_runs_as_results_md_shows_it_with_no_path_set() -> None:
    # Given a plain `python -m benchmarks.prompt_caching` in the checkout, no PYTHONPATH (it loads the
    # configured workflows, triage among them, which make setup put on .venv's path)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(  # noqa: S603 - this checkout's own benchmark
        [sys.executable, "-m", "benchmarks.prompt_caching", "--rounds", "1", "--json"],
        cwd=Path(__file__).resolve().parents[2], env=env, capture_output=True, text=True, check=False,
        timeout=300,
    )  # fmt: skip
    # Then it measures (no "No module named 'triage'")
    assert done.returncode == 0, done.stderr[-2000:]
    assert set(json.loads(done.stdout)) == {"rows", "ratios", "sweep", "targets"}
