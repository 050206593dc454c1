"""Which prices each provider's calls are charged at, with their sources, and what a call costs.

USD per million tokens. The published prices are ``genai-prices``' (Pydantic's price database),
read at build time into ``lockgate.model.published_prices`` (``make prices``; a test fails when that
table and the pinned library disagree). This module adds by hand only what the library lacks, each
with its source: Claude Platform on AWS (not in the library) and any model the library does not
list (``OWN_PRICES``). Which price a model id has in a deployment (these, and its own ``[models]``)
is ``price_table``'s.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from lockgate.model import published_prices as published
from lockgate.model.client import Usage
from lockgate.model.rates import CACHE_WRITE_1H, CACHE_WRITE_5M, Price

__all__ = ["CACHE_WRITE_1H", "CACHE_WRITE_5M", "PRICES", "Price", "cost_usd", "estimate_usd"]

BATCH_DISCOUNT = 0.5  # Message Batches: half of every line, caching multipliers included
PRICES: dict[str, Price] = published.PRICES["anthropic"]  # Anthropic's API
PRICES_AS_OF = published.READ_ON

# Bedrock prices Claude per endpoint kind: a global inference profile (global.anthropic.…) at the
# global price; an in-Region model id (anthropic.…) or a geographic inference profile (us./eu./
# apac./jp./au./us-gov.anthropic.…) at the regional one, 10% more (genai-prices' Bedrock notes, from
# AWS's price list API). An application inference profile's ARN does not say which it routes to: the
# dearer, regional, until [models."<id>".bedrock] says otherwise.
BEDROCK_GLOBAL, BEDROCK_REGIONAL = "bedrock-global", "bedrock-regional"
ENDPOINT_TITLES = {
    "anthropic": "Anthropic API",
    BEDROCK_GLOBAL: "Amazon Bedrock, global endpoint",
    BEDROCK_REGIONAL: "Amazon Bedrock, regional endpoint",
}
# Claude Platform on AWS is not in the library. Its billing: "Anthropic rates your token usage in
# USD at standard per-model, per-feature rates ... then converts the result to CCUs at $0.01 per
# CCU" (docs.aws.amazon.com/claude-platform/latest/userguide/billing, read 2026-12-02).
CLAUDE_PLATFORM_ON_AWS = (
    "Anthropic's standard rates, billed as CCUs at $0.01 (docs.aws.amazon.com/claude-platform/latest/"
    "userguide/billing, read 2026-12-02)"
)
# What the library lacks, by hand: endpoint → family → (price, source, as-of day). Empty while
# genai-prices lists every Claude model on every endpoint Lockgate calls; a test fails when an
# entry here is also in the library, so this table only shrinks as the library grows.
OWN_PRICES: dict[str, dict[str, tuple[Price, str, str]]] = {}


@dataclass(frozen=True)
class Sourced:
    """A published price with where it comes from and the day it was read there."""

    price: Price
    source: str
    as_of: str  # YYYY-MM-DD


def bedrock_endpoint(bedrock_id: str) -> str:
    """Which Bedrock price applies to calls to a Bedrock model id, inference profile or ARN."""
    return BEDROCK_GLOBAL if bedrock_id.startswith("global.") else BEDROCK_REGIONAL


def endpoint_prices(endpoint: str) -> dict[str, Sourced]:
    """Every published price on one endpoint (``ENDPOINT_TITLES``), by model family, with its source."""
    found = {
        name: Sourced(price, _library_source(endpoint, name), published.READ_ON)
        for name, price in published.PRICES[endpoint].items()
    }
    for name, (price, source, as_of) in OWN_PRICES.get(endpoint, {}).items():
        found[name] = Sourced(price, source, as_of)
    return found


def provider_prices(provider: str) -> dict[str, Sourced]:
    """The published prices of a ``[provider]`` name, before any Bedrock id chooses an endpoint.

    Bedrock: the regional prices (what an id without ``global.`` costs); Claude Platform on AWS:
    Anthropic's, with the billing page as a further source.
    """
    if provider == "bedrock":
        return endpoint_prices(BEDROCK_REGIONAL)
    found = endpoint_prices("anthropic")
    if provider == "aws":
        return {
            n: Sourced(s.price, f"{CLAUDE_PLATFORM_ON_AWS}; {s.source}", s.as_of) for n, s in found.items()
        }
    return found


def _library_source(endpoint: str, name: str) -> str:
    library_id, refs, since = published.LISTED[endpoint][name]
    cited = f": {refs[0]}" if refs else ""
    dated = f", in effect since {since}" if since else ""
    return f"{published.LIBRARY} {published.LIBRARY_VERSION} {library_id}{dated}{cited}"


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


def cost_usd(base: Price, usage: Usage, cache_ttl: str = "5m", batch: bool = False) -> float:
    """Dollars for one call's usage at a model's price (``PriceTable.cost_usd`` looks the price up by id)."""
    prompt = usage.input_tokens + usage.cache_creation_input_tokens + usage.cache_read_input_tokens
    price = base.rates_for(prompt)
    # The writes the reply says are 5-minute ones at that price (a "1h" request's conversation
    # writes); the rest at the request's TTL (all of them where the reply gave no split).
    five_minutes = min(usage.cache_creation_5m_input_tokens, usage.cache_creation_input_tokens)
    rest = usage.cache_creation_input_tokens - five_minutes
    writes = five_minutes * price.cache_write("5m") + rest * price.cache_write(cache_ttl)
    total = (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + writes
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
