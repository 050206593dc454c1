"""Published model prices, dated and in one place, and what a call costs at a price. USD per million tokens.

Which price a model id has (these, and the deployment's own ``[models]``) is ``price_table``'s.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from lockgate.model.client import Usage

PRICES_AS_OF = "2026-11-01"
CACHE_WRITE_5M = 1.25  # × the input price
CACHE_WRITE_1H = 2.0
BATCH_DISCOUNT = 0.5  # Message Batches: half of every line, caching multipliers included


@dataclass(frozen=True)
class Price:
    """Per-million-token prices for one model.

    ``long_prompt`` is a second set of rates for requests whose prompt (input + cache reads +
    cache writes) is over ``long_prompt_over`` tokens; it then applies to every token of the
    request, output included.
    """

    input: float
    output: float
    cache_read: float
    long_prompt_over: int | None = None
    long_prompt: Price | None = None

    def rates_for(self, prompt_tokens: int) -> Price:
        """The rates that apply to a request with this many prompt tokens."""
        over = self.long_prompt_over
        if self.long_prompt is not None and over is not None and prompt_tokens > over:
            return self.long_prompt
        return self


# Published list prices (platform.claude.com/docs/en/about-claude/pricing), as of PRICES_AS_OF.
# Haiku 5.5 is priced in two bands by prompt length: ≤100k tokens $0.10/$0.50, over 100k
# $0.50/$2.50 with cache reads $0.05 (cache writes follow the input price × the multipliers).
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
    "claude-haiku-5-5": Price(
        0.10, 0.50, 0.01, long_prompt_over=100_000, long_prompt=Price(0.50, 2.50, 0.05)
    ),
    "claude-haiku-4-5": Price(1.00, 5.00, 0.10),
}


# Prices per provider: Lockgate ships only those it can source, each with its source and date.
# - Claude Platform on AWS: "Anthropic rates your token usage in USD at standard per-model,
#   per-feature rates ... then converts the result to CCUs at $0.01 per CCU"
#   (docs.aws.amazon.com/claude-platform/latest/userguide/billing, read 2026-12-02): the same table.
# - Amazon Bedrock: no published Bedrock price list for these models was at hand when this table
#   was dated, nor when it was searched again on 2026-12-02 (AWS's pricing page, as it could be read,
#   gave no per-model Claude figures; third parties' summaries are not a source), so none is
#   shipped rather than a guess. A Bedrock deployment prices each model it uses in lockgate.toml,
#   [models."<id>".bedrock], from aws.amazon.com/bedrock/pricing for its region and endpoint (the
#   worker refuses to start without one: docs/providers.md, "Cost").
PROVIDER_PRICES: dict[str, dict[str, Price]] = {"anthropic": PRICES, "aws": PRICES, "bedrock": {}}
PRICE_SOURCES: dict[str, str] = {
    "anthropic": f"platform.claude.com/docs/en/about-claude/pricing, as of {PRICES_AS_OF}",
    "aws": "Anthropic's standard rates, billed as CCUs at $0.01 (docs.aws.amazon.com/claude-platform/"
    "latest/userguide/billing, read 2026-12-02)",
    "bedrock": 'none shipped: give yours in [models."<id>".bedrock] (aws.amazon.com/bedrock/pricing)',
}


def dearest(prices: Iterable[Price]) -> Price:
    """The highest rates among ``prices`` (long-prompt bands included): what an unknown model is priced as."""
    listed = list(prices)
    rates = [p.long_prompt or p for p in listed] + listed
    return max(rates, key=lambda p: (p.output, p.input, p.cache_read))


def model_entry[T](table: Mapping[str, T], model: str, unknown: T) -> T:
    """A per-model table's entry for a model id, matching dated ids (claude-sonnet-4-5-20250929) by prefix."""
    name = matching_name(table, model)
    return unknown if name is None else table[name]


def matching_name(names: Iterable[str], model: str) -> str | None:
    """The name a model id matches: itself, or the longest name it extends with "-" (its family)."""
    # Longest name first, so "claude-opus-5-5" is not matched as "claude-opus-5".
    for name in sorted(names, key=len, reverse=True):
        if model == name or model.startswith(name + "-"):
            return name
    return None


def cache_write_multiplier(cache_ttl: str) -> float:
    """× the input price for writing the prompt cache with this TTL ("1h", else the 5-minute rate)."""
    return CACHE_WRITE_1H if cache_ttl == "1h" else CACHE_WRITE_5M


def cost_usd(base: Price, usage: Usage, cache_ttl: str = "5m", batch: bool = False) -> float:
    """Dollars for one call's usage at a model's price (``PriceTable.cost_usd`` looks the price up by id)."""
    prompt = usage.input_tokens + usage.cache_creation_input_tokens + usage.cache_read_input_tokens
    price = base.rates_for(prompt)
    total = (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + usage.cache_creation_input_tokens * price.input * cache_write_multiplier(cache_ttl)
        + usage.cache_read_input_tokens * price.cache_read
    )
    if batch:
        total *= BATCH_DISCOUNT
    return round(total / 1_000_000, 6)


def estimate_usd(
    base: Price,
    input_tokens_estimate: int,
    max_output_tokens: int,
    *,
    cache_ttl: str | None = None,
    batch: bool = False,
) -> float:
    """A cautious upper bound for one call: every input token uncached, the full output cap.

    Pass the request's ``cache_ttl`` ("5m"/"1h") when it carries cache markers: a cache write
    costs more than plain input, so the bound then prices the whole prompt as a cache write.
    """
    if input_tokens_estimate < 0 or max_output_tokens < 0:
        raise ValueError("token counts cannot be negative")
    if cache_ttl in (None, "off"):
        usage = Usage(input_tokens=input_tokens_estimate, output_tokens=max_output_tokens)
        return cost_usd(base, usage, batch=batch)
    usage = Usage(cache_creation_input_tokens=input_tokens_estimate, output_tokens=max_output_tokens)
    return cost_usd(base, usage, str(cache_ttl), batch=batch)
