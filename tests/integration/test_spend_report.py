"""`lockgate spend` over the daily rollup on moto, and the per-call EMF metrics."""

from __future__ import annotations

import json

import pytest
from aws_lambda_powertools.metrics import EphemeralMetrics

from lockgate.clock import FixedClock
from lockgate.model.client import Usage
from lockgate.model.usage import EmfUsageMetrics, ModelTotals, UsageRollup
from lockgate.telemetry import CountingMetrics
from lockgate_infra.cli.main import _parser
from lockgate_infra.cli.spend import render, spend_rows
from tests.support import LOG, Aws

DAY = 86_400


def totals(model_calls: list[tuple[Usage, float]], *, cache_hits: int = 0) -> ModelTotals:
    found = ModelTotals()
    for usage, usd in model_calls:
        found.add(usage, usd)
    for _ in range(cache_hits):
        found.add(Usage(), 0.0, cache_hits=1)
    return found


def test_spend_reads_each_days_rollup_per_task_and_model(aws: Aws, clock: FixedClock) -> None:
    # Given runs finished yesterday and today, for two tasks and two models
    db = aws.client("dynamodb")
    rollup = UsageRollup(db, aws.state_table, clock, log=LOG, metrics=CountingMetrics())
    cached = Usage(input_tokens=100, output_tokens=50, cache_read_input_tokens=900)
    rollup.add_run("r1", "support-inbox", {"claude-sonnet-5-5": totals([(cached, 0.01)], cache_hits=1)})
    clock.advance(DAY)
    rollup.add_run("r2", "support-inbox", {"claude-sonnet-5-5": totals([(cached, 0.01), (cached, 0.01)])})
    rollup.add_run("r3", "triage", {"claude-haiku-5-5": totals([(Usage(input_tokens=400), 0.00004)])})

    # When the last two days are read
    rows = spend_rows(db, aws.state_table, clock.now(), days=2)

    # Then there is a row per day, task and model, each run counted once (the loop adds a run only
    # after the finish that ended it: tests/agent/test_costs.py)
    by_key = {(r["day"], r["task"], r["model"]): r for r in rows}
    assert set(by_key) == {
        ("2026-01-02", "support-inbox", "claude-sonnet-5-5"),
        ("2026-01-02", "triage", "claude-haiku-5-5"),
        ("2026-01-01", "support-inbox", "claude-sonnet-5-5"),
    }
    today = by_key[("2026-01-02", "support-inbox", "claude-sonnet-5-5")]
    assert (today["runs"], today["calls"], float(today["usd"])) == (1, 2, 0.02)
    assert today["ratio"] == pytest.approx(0.9)  # 900 of 1000 prompt tokens read from the cache
    assert by_key[("2026-01-01", "support-inbox", "claude-sonnet-5-5")]["cache_hits"] == 1
    # And the table shows them with a total
    table = render(rows)
    assert "triage" in table and "90%" in table and "total: $0.0300" in table
    # And only one day back shows today's rows only
    assert {r["day"] for r in spend_rows(db, aws.state_table, clock.now(), days=1)} == {"2026-01-02"}


def test_the_spend_command_takes_days_and_a_target() -> None:
    args = _parser().parse_args(["spend", "--days", "3", "--stack", "lockgate"])
    assert (args.days, args.stack) == (3, "lockgate")


def test_each_call_is_an_emf_blob_with_task_and_model_dimensions(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the worker's per-call metrics (switched on: the suite turns Powertools metrics off)
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    metrics = EmfUsageMetrics(lambda: EphemeralMetrics(namespace="Lockgate"), frozenset({"support-inbox"}))
    # When one call is recorded for a known task and a dated model id, and one for an unknown task
    usage = Usage(input_tokens=10, output_tokens=20, cache_read_input_tokens=30)
    metrics.model_call("support-inbox", "claude-sonnet-5-5-20261001", usage, 0.0123, cache_hit=False)
    metrics.model_call("made-up", "some-new-model", usage, 0.5, cache_hit=True)
    # Then each is one EMF document; dimensions are bounded (price-table names, configured tasks)
    first, second = (json.loads(line) for line in capsys.readouterr().out.strip().splitlines())
    assert first["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["task", "model"]]
    assert (first["task"], first["model"]) == ("support-inbox", "claude-sonnet-5-5")
    assert (first["ModelCostUSD"], first["CacheReadTokens"], first["OutputTokens"]) == ([0.0123], [30], [20])
    assert (second["task"], second["model"], second["ResponseCacheHits"]) == ("other", "other", [1])


def test_a_model_priced_in_lockgate_toml_is_its_own_dimension(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the worker's metrics for a deployment with [models."claude-haiku-6"]
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    metrics = EmfUsageMetrics(
        lambda: EphemeralMetrics(namespace="Lockgate"), frozenset({"triage"}), frozenset({"claude-haiku-6"})
    )
    # When the API answers the task's alias as the dated model
    metrics.model_call("triage", "claude-haiku-6-20270101", Usage(output_tokens=5), 0.00002, cache_hit=False)
    # Then the cost is reported under the configured family, not "other"
    (blob,) = (json.loads(line) for line in capsys.readouterr().out.strip().splitlines())
    assert (blob["task"], blob["model"], blob["ModelCostUSD"]) == ("triage", "claude-haiku-6", [0.00002])


def test_a_run_on_two_models_is_one_write_and_rows_from_before_still_read(
    aws: Aws, clock: FixedClock
) -> None:
    from tests.support import dynamodb_operations

    # Given a day with a row in the earlier layout (one item per task and model)
    db = aws.client("dynamodb")
    db.put_item(
        TableName=aws.state_table,
        Item={
            "pk": {"S": "usage#2026-01-01"},
            "sk": {"S": "rollup#triage#claude-haiku-4-5"},
            "runs": {"N": "3"},
            "calls": {"N": "3"},
            "usd": {"N": "0.003"},
        },
    )
    rollup = UsageRollup(db, aws.state_table, clock, log=LOG, metrics=CountingMetrics())
    sent = dynamodb_operations(db)
    # When a run that used two models finishes
    both = {
        "claude-haiku-5-5": totals([(Usage(input_tokens=300, output_tokens=40), 0.0005)]),
        "claude-sonnet-5-5": totals([(Usage(input_tokens=900, output_tokens=200), 0.006)] * 3),
    }
    assert rollup.add_run("r9", "support-inbox", both) is True
    # Then it was one write, and the day reads one row per task and model, old layout included
    assert sent == ["UpdateItem"]
    rows = {(r["task"], r["model"]): r for r in spend_rows(db, aws.state_table, clock.now(), days=1)}
    assert set(rows) == {
        ("support-inbox", "claude-haiku-5-5"),
        ("support-inbox", "claude-sonnet-5-5"),
        ("triage", "claude-haiku-4-5"),
    }
    sonnet = rows[("support-inbox", "claude-sonnet-5-5")]
    assert (sonnet["runs"], sonnet["calls"], float(sonnet["usd"])) == (1, 3, 0.018)
    assert rows[("triage", "claude-haiku-4-5")]["runs"] == 3
