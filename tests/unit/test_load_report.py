"""The load benchmark's report: what it checks, the spread over repeats, the paired ratios, the
target and the order of the receivers. The figures are made up; tests/integration/test_load.py runs it."""

from __future__ import annotations

import io
from collections import Counter

import pytest

from benchmarks.load import main, order
from benchmarks.load_report import BASELINE, CORE, HANDLER, RECEIVERS, Phase, check_phase, report, spread
from benchmarks.load_traffic import Request

REQUESTS = [
    Request("a", b"{}", "new"),
    Request("b", b"{}", "new"),
    Request("a", b"{}", "duplicate"),
    Request("f", b"{}", "forged"),
]


def answered(new: int = 200, duplicate: int = 200, forged: int = 401) -> dict[str, Counter[int]]:
    return {"new": Counter({new: 2}), "duplicate": Counter({duplicate: 1}), "forged": Counter({forged: 1})}


def phase(
    name: str, repeat: int, seconds: float, own_ms: float, start: tuple[int, int, int] = (0, 40, 20)
) -> Phase:
    made = Phase(name, repeat, seconds, answered(), [own_ms / 1000] * 10, start)
    if name != BASELINE:
        rows = [{"pk": {"S": f"github#{i}"}, "status": {"S": "done"}, "attempts": {"N": "1"}} for i in "ab"]
        check_phase(made, REQUESTS, rows, drained=True, prefix="github#")
    return made


def three_repeats(
    base_seconds: tuple[float, float, float],
    starts: dict[tuple[str, int], tuple[int, int, int]] | None = None,
) -> list[Phase]:
    """Lockgate's core takes 1 s for the 4 requests and 0.2 ms of its own per request in each repeat."""
    starts = starts or {}
    return [
        phase(
            name,
            r,
            {HANDLER: 1.0, CORE: 1.0, BASELINE: base_seconds[r]}[name],
            {CORE: 0.2}.get(name, 0.4),
            starts.get((name, r), (0, 40, 20)),
        )  # fmt: skip
        for r in range(3)
        for name in order(r)
    ]


def test_figures_are_medians_with_their_range_and_ratios_are_paired_within_a_repeat() -> None:
    # Given three repeats in which the baseline takes 2, 1.6 and 4 s for the same traffic
    out = io.StringIO()

    # When the report is printed
    status = report(REQUESTS, three_repeats((2.0, 1.6, 4.0)), out)

    # Then deliveries/s is the median with its range, and the throughput ratio is 2/1, 1.6/1, 4/1 per repeat
    text = out.getvalue()
    assert "| baseline core | 2 (1–2) | 0.40 (0.40–0.40) |" in text
    assert "| lockgate core ÷ baseline core, deliveries/s | 2.00 (1.60–4.00) |" in text
    assert "| lockgate core ÷ baseline core, p50 own | 0.50 (0.50–0.50) |" in text
    assert "median ≥ 1.00: 2.00 — met" in text
    assert "FAIL" not in text and text.count("  ok   ") == 6
    assert status == 0


def test_a_baseline_faster_in_the_median_repeat_misses_the_target() -> None:
    # Given a baseline that takes 0.8 s in two repeats of three
    out = io.StringIO()

    # When the report is printed
    status = report(REQUESTS, three_repeats((0.8, 0.8, 4.0)), out)

    # Then the median ratio 0.80 is not met and the run fails, though every check held
    assert "median ≥ 1.00: 0.80 — not met" in out.getvalue()
    assert "FAIL" not in out.getvalue()
    assert status == 1


def test_a_phase_that_began_with_a_fuller_queue_fails_the_run() -> None:
    # Given the second repeat's baseline phase began with 120 messages in its queue
    out = io.StringIO()

    # When the report is printed
    status = report(REQUESTS, three_repeats((2.0, 2.0, 2.0), {(BASELINE, 1): (120, 40, 20)}), out)

    # Then the like-for-like check fails, naming the starts
    assert "FAIL every phase began with an empty queue and the same table sizes" in out.getvalue()
    assert "(120, 40, 20)" in out.getvalue()
    assert status == 1


def test_a_delivery_processed_twice_or_a_duplicate_refused_fails_its_checks() -> None:
    # Given a phase whose delivery "b" took two attempts, and whose duplicate got 500
    made = Phase(CORE, 0, 1.0, answered(duplicate=500), [0.001])
    rows = [
        {"pk": {"S": "github#a"}, "status": {"S": "done"}, "attempts": {"N": "1"}},
        {"pk": {"S": "github#b"}, "status": {"S": "done"}, "attempts": {"N": "2"}},
    ]

    # When it is checked
    check_phase(made, REQUESTS, rows, drained=True, prefix="github#")

    # Then those two checks fail and the others hold
    failed = {name for name, ok in made.checks.items() if not ok}
    assert failed == {"every stored delivery processed once", "every duplicate answered 200"}
    assert made.states == Counter({("done", "1"): 1, ("done", "2"): 1})


def test_a_missing_delivery_fails_stored_and_processed() -> None:
    # Given a phase that stored only "a" of the two new deliveries
    made = Phase(HANDLER, 0, 1.0, answered(), [0.001])

    # When it is checked
    check_phase(made, REQUESTS, [{"pk": {"S": "github#a"}, "status": {"S": "done"}, "attempts": {"N": "1"}}],
                drained=True, prefix="github#")  # fmt: skip

    # Then stored and processed-once fail
    assert {n for n, ok in made.checks.items() if not ok} == {
        "stored = distinct valid deliveries",
        "every stored delivery processed once",
    }


def test_the_order_reverses_every_other_repeat_so_each_receiver_averages_the_same_position() -> None:
    # Given four repeats
    orders = [order(r) for r in range(4)]

    # Then each is forwards or backwards, and each receiver's mean position is the middle one
    assert orders[0] == RECEIVERS and orders[1] == RECEIVERS[::-1] and orders[2] == RECEIVERS
    for name in RECEIVERS:
        assert sum(o.index(name) for o in orders) / 4 == 1.0


def test_spread_is_the_median_and_the_range() -> None:
    assert spread([3.0, 1.0, 2.0, 10.0], 1) == "2.5 (1.0–10.0)"


def test_fewer_than_three_repeats_are_refused_before_anything_starts(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # When the benchmark is asked for two repeats
    with pytest.raises(SystemExit) as exit_:
        main(["--deliveries", "10", "--repeats", "2"])

    # Then it exits 2 with one line saying why
    assert exit_.value.code == 2
    assert "--repeats must be at least 3" in capsys.readouterr().err
