"""Which prompt-cache lifetime pays for a task, from how far apart its runs start and its fixed prefix.

Per run, in units of the input price per token: the fixed prefix (tools + system) is either sent
plain (1×), written to the cache (Anthropic: 1.25× for 5 minutes, 2× for an hour) or read from it
(0.1×; 0.05× on Sonnet and Opus 5.5): each model's own ratios, from its price. Calls after the
first in a run are seconds apart, so they read the cache whatever its lifetime; what the lifetime
decides is whether the NEXT run finds the prefix still cached (a read refreshes it). Worked
example, a prefix that is 80% of the prompt on a 30-minute schedule: 5 minutes costs
0.8 × 1.25 + 0.2 = 1.2 (20% more than no cache); one hour costs 0.8 × 0.1 + 0.2 = 0.28 (72% less).

A schedule's runs are evenly spaced: the next one is within a lifetime or not. Events arrive at
random: with runs a mean gap apart (Poisson arrivals), the next one is within a lifetime L with
probability 1 - exp(-L / gap). With Anthropic's ratios the hour then pays from a mean gap of a few
minutes up to about 110 minutes (``break_even_gap``), and five minutes beyond; docs/costs.md has
the measured figures.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

from lockgate.model.pricing import model_entry
from lockgate.model.rates import CACHE_WRITE_1H, CACHE_WRITE_5M, Price

CACHE_READ = 0.1  # × the input price: Anthropic's usual ratio (a model's price may say less)
LIFETIME_SECONDS = {"5m": 300, "1h": 3600}
MIN_CACHEABLE_TOKENS = 1024  # shorter prefixes are never cached by the API: markers would do nothing

# The API's minimum cacheable prompt length per model (platform.claude.com, "Prompt caching",
# cache limitations; checked 2026-12): a breakpoint whose prefix is shorter writes nothing.
# The 5.5 models are not in the table we could check: each takes its family's latest listed
# value (Opus 5, Sonnet 5, Haiku 4.5). An unknown model gets the largest, so nothing is assumed
# cached that the API might not cache.
MIN_CACHEABLE_BY_MODEL: dict[str, int] = {
    "claude-opus-5-5": 512,
    "claude-opus-5": 512,
    "claude-opus-4-8": 1024,
    "claude-opus-4-7": 4096,
    "claude-opus-4-6": 4096,
    "claude-opus-4-5": 4096,
    "claude-opus-4-1": 1024,
    "claude-opus-4": 1024,
    "claude-sonnet-5-5": 1024,
    "claude-sonnet-5": 1024,
    "claude-sonnet-4-6": 1024,
    "claude-sonnet-4-5": 1024,
    "claude-sonnet-4": 1024,
    "claude-haiku-5-5": 4096,
    "claude-haiku-4-5": 4096,
    "claude-3-5-haiku": 2048,
    "claude-3-haiku": 2048,
}
UNKNOWN_MODEL_MIN_CACHEABLE = max(MIN_CACHEABLE_BY_MODEL.values())
CHOICES = ("off", "5m", "1h")


@dataclass(frozen=True)
class CacheRates:
    """A model's prompt-cache prices as multiples of its input price."""

    read: float = CACHE_READ
    write_5m: float = CACHE_WRITE_5M
    write_1h: float = CACHE_WRITE_1H

    @classmethod
    def of(cls, price: Price) -> CacheRates:
        """The ratios of one model's price (its short-prompt rates)."""
        return cls(
            price.cache_read / price.input,
            price.cache_write("5m") / price.input,
            price.cache_write("1h") / price.input,
        )

    def write(self, ttl: str) -> float:
        """The write multiple for "5m" or "1h"."""
        return self.write_1h if ttl == "1h" else self.write_5m


@dataclass(frozen=True)
class CacheCosts:
    """Input cost of one run per choice, in input-price × tokens."""

    off: float
    five_minutes: float
    one_hour: float

    def of(self, ttl: str) -> float:
        """The cost of one choice ("off", "5m", "1h")."""
        return {"off": self.off, "5m": self.five_minutes, "1h": self.one_hour}[ttl]


def still_cached(interval_seconds: float, ttl: str, *, regular: bool = True) -> float:
    """The chance that the next run starts within ``ttl``'s lifetime of this one.

    ``regular``: runs exactly ``interval_seconds`` apart (a schedule); else at random with that
    mean gap (events: Poisson arrivals).
    """
    lifetime = LIFETIME_SECONDS[ttl]
    if regular:
        return 1.0 if interval_seconds <= lifetime else 0.0
    return -math.expm1(-lifetime / interval_seconds)


def run_input_cost(
    *,
    interval_seconds: float,
    prefix_tokens: int,
    other_tokens: int,
    calls_per_run: int = 1,
    rates: CacheRates = CacheRates(),
    regular: bool = True,
) -> CacheCosts:
    """What a steady-state run pays for its input under each choice (``other_tokens`` per call)."""
    if interval_seconds <= 0 or prefix_tokens < 0 or other_tokens < 0 or calls_per_run < 1:
        raise ValueError("interval must be positive; token counts and calls non-negative, calls ≥ 1")
    later = (calls_per_run - 1) * prefix_tokens * rates.read  # steps 2+ read within the run
    other = calls_per_run * other_tokens

    def cached(ttl: str) -> float:
        hit = still_cached(interval_seconds, ttl, regular=regular)
        return prefix_tokens * (hit * rates.read + (1 - hit) * rates.write(ttl)) + later + other

    return CacheCosts(
        off=calls_per_run * prefix_tokens + other,
        five_minutes=cached("5m"),
        one_hour=cached("1h"),
    )


def choose_cache_ttl(
    *,
    interval_seconds: float | None,
    prefix_tokens: int,
    other_tokens: int = 0,
    calls_per_run: int = 1,
    min_cacheable_tokens: int = MIN_CACHEABLE_TOKENS,
    rates: CacheRates = CacheRates(),
    regular: bool = True,
) -> str:
    """ "5m", "1h" or "off": the cheapest for runs this far apart (ties go to the cheaper write).

    With no known interval (an event-driven task before it has seen two runs) runs are assumed
    far apart: a cache then pays only through the steps of one run, which the 5-minute write
    covers more cheaply. ``regular``: see ``still_cached``.
    """
    if prefix_tokens < min_cacheable_tokens:
        return "off"
    interval = interval_seconds if interval_seconds is not None else float("inf")
    costs = run_input_cost(
        interval_seconds=min(interval, 10**9),
        prefix_tokens=prefix_tokens,
        other_tokens=other_tokens,
        calls_per_run=calls_per_run,
        rates=rates,
        regular=regular,
    )
    return min(CHOICES, key=lambda ttl: (costs.of(ttl), CHOICES.index(ttl)))


def break_even_gap(rates: CacheRates = CacheRates(), *, upto: float = 86_400.0) -> float:
    """The mean gap between random (Poisson) runs above which a 5-minute write costs less per run
    than an hour's, for the prefix; below it (down to a few minutes) the hour costs less."""
    low, high = float(LIFETIME_SECONDS["5m"]), upto

    def hour_pays(gap: float) -> bool:
        costs = run_input_cost(
            interval_seconds=gap, prefix_tokens=1, other_tokens=0, rates=rates, regular=False
        )
        return costs.one_hour <= costs.five_minutes

    for _ in range(60):  # bisection to well under a second
        middle = (low + high) / 2
        low, high = (middle, high) if hour_pays(middle) else (low, middle)
    return round(low, 1)


def min_cacheable_tokens(model: str) -> int:
    """The shortest prefix the API caches for this model (dated ids too; unknown: the largest)."""
    return model_entry(MIN_CACHEABLE_BY_MODEL, model, UNKNOWN_MODEL_MIN_CACHEABLE)


def prefix_tokens(system: str, tools: list[dict[str, object]]) -> int:
    """About how many tokens the fixed prefix (tools + system) has: ~4 characters a token."""
    return math.ceil(len(json.dumps([tools, system], ensure_ascii=False)) / 4)
