"""Model prices, dated and in one place. USD per million tokens."""

from __future__ import annotations

from dataclasses import dataclass

from lockgate.agent.model import Usage

PRICES_AS_OF = "2026-11-01"
CACHE_WRITE_5M = 1.25  # × the input price
CACHE_WRITE_1H = 2.0


@dataclass(frozen=True)
class Price:
    """Per-million-token prices for one model."""

    input: float
    output: float
    cache_read: float


# Published list prices (platform.claude.com/docs/en/about-claude/pricing), as of PRICES_AS_OF.
# Haiku 5.5's prompts over 100k tokens cost more; Lockgate's tasks stay far below that.
PRICES: dict[str, Price] = {
    "claude-opus-5-5": Price(4.00, 20.00, 0.20),
    "claude-opus-5": Price(5.00, 25.00, 0.50),
    "claude-opus-4-8": Price(5.00, 25.00, 0.50),
    "claude-opus-4-7": Price(5.00, 25.00, 0.50),
    "claude-opus-4-6": Price(5.00, 25.00, 0.50),
    "claude-opus-4-5": Price(5.00, 25.00, 0.50),
    "claude-opus-4-1": Price(15.00, 75.00, 1.50),
    "claude-sonnet-5-5": Price(2.00, 10.00, 0.10),
    "claude-sonnet-5": Price(2.00, 10.00, 0.20),
    "claude-sonnet-4-6": Price(3.00, 15.00, 0.30),
    "claude-sonnet-4-5": Price(3.00, 15.00, 0.30),
    "claude-haiku-5-5": Price(0.10, 0.50, 0.01),
    "claude-haiku-4-5": Price(1.00, 5.00, 0.10),
}
UNKNOWN_MODEL = PRICES["claude-opus-4-1"]  # price an unknown model as the dearest: never under-count


def price_for(model: str) -> Price:
    """The price of a model id, matching dated ids (claude-sonnet-4-5-20250929) by prefix."""
    # Longest name first, so "claude-opus-5-5" is not priced as "claude-opus-5".
    for name in sorted(PRICES, key=len, reverse=True):
        if model == name or model.startswith(name + "-"):
            return PRICES[name]
    return UNKNOWN_MODEL


def cost_usd(model: str, usage: Usage, cache_ttl: str = "5m") -> float:
    """Dollars for one call's usage."""
    price = price_for(model)
    write = CACHE_WRITE_1H if cache_ttl == "1h" else CACHE_WRITE_5M
    total = (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + usage.cache_creation_input_tokens * price.input * write
        + usage.cache_read_input_tokens * price.cache_read
    )
    return round(total / 1_000_000, 6)
