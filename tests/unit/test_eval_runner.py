"""run_suite: repeats, pass counts, common problems, the gate, and the saved result."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lockgate.clock import FixedClock
from lockgate.errors import StoreUnavailable
from lockgate.evals import Case, ResultsStore, Transcript, parse_suite, prompt_version, run_suite
from lockgate.evals.evidence import ToolCall

SUITE = parse_suite(
    {
        "task": "support-inbox",
        "gate": 0.5,
        "cases": [
            {
                "name": "steady",
                "events": [{"text": "a"}],
                "checks": [{"kind": "contains", "text": "ok"}],
            },
            {
                "name": "flaky",
                "events": [{"text": "b"}],
                "checks": [
                    {"kind": "contains", "text": "ok"},
                    {"kind": "no_call", "tool": "refund_order"},
                ],
            },
        ],
    }
)


def flaky_model(case: Case, attempt: int) -> Transcript:
    """steady always passes; flaky fails its two checks on odd attempts."""
    if case.name == "flaky" and attempt % 2:
        return Transcript("nope", (ToolCall("refund_order", {"order_id": "A-1"}, "blocked", "policy"),))
    return Transcript("ok", cost_usd=0.002, model_calls=2)


def test_each_case_runs_n_times_with_counts_intervals_and_common_problems() -> None:
    seen: list[tuple[str, int]] = []
    progress: list[tuple[int, int]] = []

    def run(case: Case, attempt: int) -> Transcript:
        seen.append((case.name, attempt))
        return flaky_model(case, attempt)

    report = run_suite(
        SUITE, run, runs=4, progress=lambda d, t, _: progress.append((d, t)), clock=FixedClock()
    )
    assert seen == [("steady", n) for n in range(4)] + [("flaky", n) for n in range(4)]
    assert progress[-1] == (8, 8) and len(progress) == 8
    steady, flaky = report.cases
    assert (steady.passes, steady.trials, flaky.passes, flaky.trials) == (4, 4, 2, 4)
    assert flaky.interval.low == pytest.approx(0.15, abs=0.01)
    assert flaky.common_problems() == [
        ("contains 'ok': missing 'ok'", 2),
        ("no_call attempted refund_order: blocked (policy)", 2),
    ]
    assert report.overall.passes == 6 and report.overall.trials == 8
    assert report.cost_usd == pytest.approx(0.012) and report.model_calls == 12
    assert report.cost_per_call == pytest.approx(0.001)
    assert report.date == "2026-01-01T00:00:00Z"


def test_the_gate_fails_on_a_low_lower_bound_or_a_case_that_never_passes() -> None:
    def never_flaky(case: Case, attempt: int) -> Transcript:
        return Transcript("nope" if case.name == "flaky" else "ok")

    report = run_suite(SUITE, never_flaky, runs=3)
    assert not report.gate_passed
    assert report.gate_failures == [
        "overall lower bound 18.8% is below the gate 50%",
        "case 'flaky' passed 0 of 3 runs",
    ]
    # Even a generous gate fails while one case is at zero.
    generous = run_suite(SUITE, never_flaky, runs=3, gate=0.0)
    assert generous.gate_failures == ["case 'flaky' passed 0 of 3 runs"]
    assert "FAILED" in generous.summary() and "passed 0 of 3" in generous.render()
    assert run_suite(SUITE, flaky_model, runs=2, gate=0.3).gate_passed


def test_a_run_that_fails_with_a_lockgate_error_is_a_failed_trial() -> None:
    def broken(case: Case, attempt: int) -> Transcript:
        raise StoreUnavailable("ThrottlingException")

    report = run_suite(SUITE, broken, runs=1)
    assert report.overall.passes == 0
    assert report.cases[0].common_problems() == [("run failed: StoreUnavailable: ThrottlingException", 1)]


def test_a_bug_in_the_rig_is_not_hidden() -> None:
    def buggy(case: Case, attempt: int) -> Transcript:
        raise KeyError("oops")

    with pytest.raises(KeyError):
        run_suite(SUITE, buggy, runs=1)


def test_results_are_saved_with_model_prompt_version_date_and_counts(tmp_path: Path) -> None:
    report = run_suite(SUITE, flaky_model, runs=2, model="shop", prompt_version="abc123", clock=FixedClock())
    store = ResultsStore(tmp_path / "evals")
    first, second = store.save(report), store.save(report)
    assert first != second  # the same second twice: both kept
    saved = json.loads(first.read_text())
    assert first.name == "support-inbox-20260101T000000Z-shop-abc123.json"
    assert (saved["model"], saved["prompt_version"], saved["date"]) == (
        "shop",
        "abc123",
        "2026-01-01T00:00:00Z",
    )
    assert [(c["name"], c["passes"], c["trials"]) for c in saved["cases"]] == [
        ("steady", 2, 2),
        ("flaky", 1, 2),
    ]
    assert saved["overall"]["passes"] == 3 and saved["overall"]["low"] == pytest.approx(0.3006, abs=1e-3)
    assert saved["gate_passed"] is False and saved["gate_failures"]
    assert [r["model"] for r in store.history("support-inbox")] == ["shop", "shop"]


def test_the_prompt_version_follows_the_system_prompt_and_the_tool_schemas() -> None:
    tools = [{"name": "lookup_order", "input_schema": {"type": "object"}}]
    base = prompt_version("You are helpful.", tools)
    assert len(base) == 12 and base == prompt_version("You are helpful.", tools)
    assert base != prompt_version("You are terse.", tools)
    assert base != prompt_version("You are helpful.", [{**tools[0], "description": "Look up."}])


def test_runs_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        run_suite(SUITE, flaky_model, runs=0)


def test_a_failing_trial_in_which_the_model_called_no_tool_says_what_the_model_said() -> None:
    # Given a model that answers with words only (an offline model written for another task)
    def words_only(case: Case, attempt: int) -> Transcript:
        return Transcript("This model was written for another task; nothing was done.")

    report = run_suite(SUITE, words_only, runs=1, clock=FixedClock())

    # Then each failing case's problems include the model's last words, and a passing trial adds none
    steady, flaky = report.cases
    said = "the model called no tool; it said: 'This model was written for another task; nothing was done.'"
    assert said in steady.problems and said in flaky.problems
    assert len(steady.problems) == 2  # the failed check, then the model's words
