"""Choosing the prompt-cache lifetime per task: the arithmetic, from pricing.py's multipliers."""

from __future__ import annotations

import pytest

from lockgate.agent.run_gaps import RunGaps
from lockgate.errors import ConfigError
from lockgate.model.pricing import CACHE_WRITE_1H, CACHE_WRITE_5M
from lockgate.model.prompt_cache import (
    CACHE_READ,
    CacheRates,
    break_even_gap,
    choose_cache_ttl,
    run_input_cost,
)
from tests.agent.toolkit import Effects, make_task
from tests.support import PRICES

HALF_HOUR = 1800


def test_a_half_hourly_task_pays_20_percent_more_for_a_5_minute_cache_and_saves_most_with_an_hour() -> None:
    # Given a prompt whose fixed prefix is 80% of it, run every 30 minutes (one call a run)
    costs = run_input_cost(interval_seconds=HALF_HOUR, prefix_tokens=8_000, other_tokens=2_000)

    # Then the 5-minute cache has expired at every run: each pays the 1.25x write on the prefix
    assert CACHE_WRITE_5M == 1.25 and CACHE_WRITE_1H == 2.0 and CACHE_READ == 0.1
    assert costs.off == 10_000
    assert costs.five_minutes / costs.off == pytest.approx(1.20)
    # And the hour-long cache is still warm (each read refreshes it): 0.8 x 0.1 + 0.2 = 0.28
    assert costs.one_hour / costs.off == pytest.approx(0.28)
    assert 1 - costs.one_hour / costs.off == pytest.approx(0.72)  # about three quarters saved
    assert choose_cache_ttl(interval_seconds=HALF_HOUR, prefix_tokens=8_000, other_tokens=2_000) == "1h"


@pytest.mark.parametrize(
    ("interval", "prefix", "calls", "expected"),
    [
        (120, 8_000, 1, "5m"),  # within 5 minutes: the cheaper write stays warm
        (HALF_HOUR, 8_000, 1, "1h"),
        (3 * 3600, 8_000, 1, "off"),  # nothing survives between runs and one call reads nothing
        (3 * 3600, 8_000, 3, "5m"),  # but later steps of a run read the 5-minute write
        (None, 8_000, 2, "5m"),  # event-driven: runs assumed far apart
        (HALF_HOUR, 500, 3, "off"),  # under the API's minimum cacheable prefix
    ],
)
def test_the_cheapest_lifetime_is_chosen(
    interval: float | None, prefix: int, calls: int, expected: str
) -> None:
    assert choose_cache_ttl(interval_seconds=interval, prefix_tokens=prefix, calls_per_run=calls) == expected


def test_a_task_resolves_auto_from_its_interval_and_rejects_contradictions() -> None:
    # Given tasks declaring how often they run
    half_hourly = make_task(Effects(), cache_ttl="auto", run_interval_seconds=HALF_HOUR)
    unscheduled = make_task(Effects(), cache_ttl="auto")
    # Then auto resolves from the interval; an explicit choice is kept
    assert half_hourly.prompt_cache_ttl(4_000, PRICES) == "1h"
    assert unscheduled.prompt_cache_ttl(4_000, PRICES) == "5m"
    # A prefix too short to cache keeps its marker: the conversation's markers after it still pay
    assert half_hourly.prompt_cache_ttl(100, PRICES) == "5m"
    assert make_task(Effects(), cache_ttl="1h").prompt_cache_ttl(10, PRICES) == "1h"
    # And contradictory or unknown settings fail when the task is built
    with pytest.raises(ConfigError, match="cacheable and fresh"):
        make_task(Effects(), cacheable=True, fresh=True)
    with pytest.raises(ConfigError, match="cache_ttl"):
        make_task(Effects(), cache_ttl="10m")


@pytest.mark.parametrize(
    ("observed_gap", "expected"),
    [
        (None, "5m"),  # no two runs seen yet: assumed far apart
        (10.0, "1h"),  # close together: both read; the hour costs no more
        (360.0, "1h"),  # sparse: five minutes would expire before the next event
        (1800.0, "1h"),
        (3 * 3600.0, "5m"),  # past the break-even (~110 minutes with Poisson arrivals)
    ],
)
def test_given_an_event_driven_auto_task_then_the_observed_gap_chooses_the_prefix_lifetime(
    observed_gap: float | None, expected: str
) -> None:
    # Given an event-driven task on cache_ttl="auto" and the mean gap the worker has seen
    task = make_task(Effects(), cache_ttl="auto")
    # Then the lifetime is the cheaper one for random arrivals that far apart
    assert task.prompt_cache_ttl(8_000, PRICES, observed_gap) == expected


def test_given_a_configured_interval_then_it_wins_over_what_the_worker_observed() -> None:
    task = make_task(Effects(), cache_ttl="auto", run_interval_seconds=3 * 3600.0)
    assert task.prompt_cache_ttl(8_000, PRICES, observed_gap=360.0) == "5m"


def test_the_break_even_gap_for_random_events_is_about_110_minutes_at_anthropics_ratios() -> None:
    # Below it the hour pays; above it five minutes does (docs/costs.md states it)
    gap = break_even_gap()
    assert 100 * 60 < gap < 115 * 60
    costs = [run_input_cost(interval_seconds=g, prefix_tokens=1, other_tokens=0, regular=False) for g in (
        gap * 0.9, gap * 1.1)]  # fmt: skip
    assert costs[0].one_hour < costs[0].five_minutes and costs[1].one_hour > costs[1].five_minutes


def test_a_models_own_cache_ratios_come_from_its_price() -> None:
    sonnet = CacheRates.of(PRICES.price("claude-sonnet-5-5"))
    assert (sonnet.read, sonnet.write_5m, sonnet.write_1h) == (0.05, 1.25, 2.0)


def test_given_runs_seen_in_this_process_then_the_mean_gap_counts_each_run_once() -> None:
    gaps = RunGaps()
    assert gaps.observe("t", "run-1", 0.0) is None
    assert gaps.observe("t", "run-1", 30.0) is None  # a redelivery of the same run: not a new start
    assert gaps.observe("t", "run-2", 600.0) == 600.0
    assert gaps.observe("t", "run-3", 800.0) == 400.0
    assert gaps.mean_gap("other") is None
