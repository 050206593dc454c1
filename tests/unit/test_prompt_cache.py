"""Choosing the prompt-cache lifetime per task: the arithmetic, from pricing.py's multipliers."""

from __future__ import annotations

import pytest

from lockgate.errors import ConfigError
from lockgate.model.pricing import CACHE_WRITE_1H, CACHE_WRITE_5M
from lockgate.model.prompt_cache import CACHE_READ, choose_cache_ttl, run_input_cost
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
    assert half_hourly.prompt_cache_ttl(100, PRICES) == "off"
    assert make_task(Effects(), cache_ttl="1h").prompt_cache_ttl(10, PRICES) == "1h"
    # And contradictory or unknown settings fail when the task is built
    with pytest.raises(ConfigError, match="cacheable and fresh"):
        make_task(Effects(), cacheable=True, fresh=True)
    with pytest.raises(ConfigError, match="cache_ttl"):
        make_task(Effects(), cache_ttl="10m")
