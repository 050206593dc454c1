"""Wilson score intervals and the "winner only when the intervals don't overlap" rule."""

from __future__ import annotations

import pytest

from lockgate.evals.stats import compare, wilson


@pytest.mark.parametrize(
    ("passes", "trials", "low", "high"),
    [
        # Published values of the Wilson 95% score interval (z = 1.96).
        (9, 10, 0.5958, 0.9821),
        (5, 10, 0.2366, 0.7634),
        (0, 10, 0.0, 0.2775),
        (10, 10, 0.7225, 1.0),
        (1, 10, 0.0179, 0.4042),
        # Newcombe (1998), "Two-sided confidence intervals for the single proportion", Table I.
        (81, 263, 0.2553, 0.3662),
        (15, 148, 0.0624, 0.1605),
        (0, 20, 0.0, 0.1611),
        (1, 29, 0.0061, 0.1718),
        (20, 20, 0.8389, 1.0),
        (1, 1, 0.2065, 1.0),
    ],
)
def test_wilson_matches_known_values(passes: int, trials: int, low: float, high: float) -> None:
    interval = wilson(passes, trials)
    assert interval.low == pytest.approx(low, abs=5e-4)
    assert interval.high == pytest.approx(high, abs=5e-4)
    assert 0.0 <= interval.low <= interval.rate <= interval.high <= 1.0


def test_wilson_with_no_trials_knows_nothing() -> None:
    interval = wilson(0, 0)
    assert (interval.low, interval.high, interval.rate) == (0.0, 1.0, 0.0)


@pytest.mark.parametrize(("passes", "trials"), [(-1, 3), (4, 3), (0, -1)])
def test_wilson_refuses_impossible_counts(passes: int, trials: int) -> None:
    with pytest.raises(ValueError, match="passes"):
        wilson(passes, trials)


def test_more_trials_narrow_the_interval() -> None:
    assert wilson(30, 30).low > wilson(10, 10).low > wilson(3, 3).low


def test_a_winner_only_when_the_intervals_do_not_overlap() -> None:
    # Given 20/20 against 5/20: the intervals are apart.
    clear = compare("A", wilson(20, 20), "B", wilson(5, 20))
    assert clear.winner == "A"
    assert "winner: A" in clear.verdict()
    # And the other way round names B.
    assert compare("A", wilson(5, 20), "B", wilson(20, 20)).winner == "B"
    # Given 9/10 against 6/10: the rates differ but the intervals overlap, so nobody wins.
    close = compare("A", wilson(9, 10), "B", wilson(6, 10))
    assert close.winner is None
    assert close.verdict().startswith("no clear winner")


def test_touching_intervals_count_as_overlapping() -> None:
    a, b = wilson(10, 10), wilson(10, 10)
    assert a.overlaps(b) and compare("A", a, "B", b).winner is None


def test_describe_reads_as_counts_rate_and_interval() -> None:
    assert wilson(9, 10).describe() == "9/10 = 90% (95% CI 60%-98%)"
