"""Pass rates with Wilson 95% score intervals, and comparisons that only name a winner when clear."""

from __future__ import annotations

import math
from dataclasses import dataclass

Z95 = 1.959963984540054  # the two-sided 95% normal quantile


@dataclass(frozen=True)
class Interval:
    """``passes`` out of ``trials`` with its Wilson score interval [low, high]."""

    passes: int
    trials: int
    low: float
    high: float

    @property
    def rate(self) -> float:
        """The observed pass rate (0 when there were no trials)."""
        return self.passes / self.trials if self.trials else 0.0

    def overlaps(self, other: Interval) -> bool:
        """Whether the two intervals share any point (touching counts as overlapping)."""
        return self.low <= other.high and other.low <= self.high

    def describe(self) -> str:
        """E.g. "9/10 = 90% (95% CI 60%-98%)"."""
        return f"{self.passes}/{self.trials} = {self.rate:.0%} (95% CI {self.low:.0%}-{self.high:.0%})"

    def as_dict(self) -> dict[str, float | int]:
        """JSON-ready."""
        return {
            "passes": self.passes,
            "trials": self.trials,
            "rate": round(self.rate, 4),
            "low": round(self.low, 4),
            "high": round(self.high, 4),
        }


def wilson(passes: int, trials: int, z: float = Z95) -> Interval:
    """The Wilson score interval for a binomial proportion; [0, 1] when there are no trials.

    Unlike the normal approximation it stays inside [0, 1] and is honest at 0/n and n/n,
    which is where eval results with few runs usually sit.
    """
    if trials < 0 or passes < 0 or passes > trials:
        raise ValueError(f"need 0 <= passes <= trials, got {passes}/{trials}")
    if trials == 0:
        return Interval(0, 0, 0.0, 1.0)
    p = passes / trials
    z2 = z * z
    centre = (p + z2 / (2 * trials)) / (1 + z2 / trials)
    half = (z / (1 + z2 / trials)) * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials))
    # Exact bounds at the edges (the formula gives them up to rounding).
    low = 0.0 if passes == 0 else max(0.0, centre - half)
    high = 1.0 if passes == trials else min(1.0, centre + half)
    return Interval(passes, trials, low, high)


@dataclass(frozen=True)
class Comparison:
    """A against B: the winner's label, or None when the intervals overlap."""

    a: str
    b: str
    a_interval: Interval
    b_interval: Interval

    @property
    def winner(self) -> str | None:
        """The label whose interval lies wholly above the other's; None if they overlap."""
        if self.a_interval.overlaps(self.b_interval):
            return None
        return self.a if self.a_interval.low > self.b_interval.high else self.b

    def verdict(self) -> str:
        """One line for people."""
        if self.winner is None:
            return (
                f"no clear winner: the intervals overlap ({self.a}: {self.a_interval.describe()}; "
                f"{self.b}: {self.b_interval.describe()})"
            )
        loser = self.b if self.winner == self.a else self.a
        return f"winner: {self.winner} (its interval lies wholly above {loser}'s)"


def compare(a: str, a_interval: Interval, b: str, b_interval: Interval) -> Comparison:
    """Compare two pass rates; a winner is declared only when the 95% intervals do not overlap."""
    return Comparison(a, b, a_interval, b_interval)
