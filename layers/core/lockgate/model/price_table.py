"""The deployment's price table: the published prices and its own ``[models]``, by model id.

Built once per function in its composition root (``lockgate.runtime``, the jobs' factories) from
the config and handed to everything that prices a call: admission's estimates and spend caps,
the run's totals and daily rollup, screens, intake, batches and their collection, the eval judge.
A function refuses to start with a configured id the table does not know (``require``), so every
call it makes is priced at a real rate. A reply whose id matches nothing (a model the API swapped
in) is still priced, as the dearest model in the table: a spend cap never under-counts.

Prices are per provider (``lockgate.model.pricing``, from genai-prices, each with its source and
date): the deployment's ``[provider]`` chooses the table; on Bedrock, each model's id in
``[provider.bedrock_models]`` chooses between the global and the regional price (``global.`` or
not). ``[models."<id>"]`` goes over them, with a table per provider (``[models."<id>".bedrock]``)
where a deployment's price differs (a negotiated rate) or the library has none. Nothing that
prices a call knows which provider answered.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

from lockgate.config import LockgateConfig, ModelConfig
from lockgate.config.prices import family
from lockgate.errors import ConfigError
from lockgate.model.client import Usage
from lockgate.model.pricing import (
    PRICES,
    Price,
    Sourced,
    bedrock_endpoint,
    cost_usd,
    dearest,
    endpoint_prices,
    estimate_usd,
    matching_name,
    model_entry,
    provider_prices,
)
from lockgate.model.prompt_cache import UNKNOWN_MODEL_MIN_CACHEABLE, min_cacheable_tokens

EXAMPLE_DATED_ID = "claude-sonnet-4-5-20250929"


CONFIGURED = "lockgate.toml"  # the source of a price given in [models]


@dataclass(frozen=True)
class ModelEntry:
    """What one model id (and its dated ids) costs, and the shortest prompt prefix the API caches."""

    price: Price
    min_cacheable_tokens: int
    source: str = CONFIGURED  # where the price comes from: the library and its reference, or the config
    as_of: str | None = None  # the day it was read there (YYYY-MM-DD); None: the deployment's own


@dataclass(frozen=True)
class PriceTable:
    """Model ids and their entries; a dated id (``claude-sonnet-4-5-20250929``) matches its family."""

    entries: Mapping[str, ModelEntry]
    provider: str = "anthropic"  # whose prices these are (lockgate.toml [provider])

    @classmethod
    def published(
        cls, provider: str = "anthropic", bedrock_models: Mapping[str, str] | None = None
    ) -> PriceTable:
        """The published prices only (``lockgate.model.pricing``)."""
        return cls.from_config({}, provider, bedrock_models)

    @classmethod
    def from_config(
        cls,
        models: Mapping[str, ModelConfig],
        provider: str = "anthropic",
        bedrock_models: Mapping[str, str] | None = None,
    ) -> PriceTable:
        """``provider``'s published prices with the config's ``[models]`` over them (an entry there wins).

        ``bedrock_models`` (``[provider.bedrock_models]``): each model id's Bedrock id, whose endpoint
        kind (global or regional) prices that model; an id not named there is priced as regional.
        """
        entries = {name: _entry(name, sourced) for name, sourced in provider_prices(provider).items()}
        if provider == "bedrock":
            for name, bedrock_id in (bedrock_models or {}).items():
                on = endpoint_prices(bedrock_endpoint(bedrock_id))
                family_name = matching_name(on, name)
                if family_name is not None:
                    entries[name] = _entry(name, on[family_name])
        for name, given in models.items():
            rates, minimum = given.price_on(provider), given.min_cacheable_tokens
            if rates is None:
                continue  # priced for other providers only
            entries[name] = ModelEntry(
                Price(rates.input, rates.output, rates.cache_read),
                # Not given: the family's published minimum when Lockgate knows one, else the largest.
                min_cacheable_tokens(name) if minimum is None else minimum,
            )
        return cls(entries, provider)

    @classmethod
    def for_deployment(cls, config: LockgateConfig) -> PriceTable:
        """The deployment's prices ([provider], [models]); ConfigError for a [capacity.models] id it lacks."""
        prices = cls.from_config(config.models, config.provider.name, config.provider.bedrock_models)
        for model in config.capacity.models:
            prices.require(model, "lockgate.toml: [capacity.models] key")
        return prices

    def entry(self, model: str) -> ModelEntry | None:
        """The entry of a model id (a dated id gets its family's); None when nothing here prices it.

        The one lookup behind ``knows``, ``price`` and ``min_cacheable_tokens``.
        """
        return model_entry(self.entries, model, None)

    def knows(self, model: str) -> bool:
        """Whether ``model`` (or the family it is a dated id of) has a price here."""
        return self.entry(model) is not None

    def require(self, model: str, where: str) -> None:
        """ConfigError unless ``model`` is known: names where it is set, the known ids, how to add one."""
        if self.knows(model):
            return
        # What to do comes before the list: a CLI clips a long line at its end.
        table = (
            f'[models."{family(model)}"]'
            if self.provider == "anthropic"
            else f'[models."{family(model)}".{self.provider}]'
        )
        on = "" if self.provider == "anthropic" else f"{self.provider} "
        raise ConfigError(
            f'{where} "{model}" has no {on}price: use a known id, or give its prices in '
            "lockgate.toml as "
            f"{table} with input, output and cache_read in USD per million tokens. "
            f"Known ids (dated ids such as {EXAMPLE_DATED_ID} match their family): "
            + (", ".join(self.entries) or "none")
        )

    def price(self, model: str) -> Price:
        """The price of a model id (dated ids too); an unknown one is priced as the dearest here."""
        found = self.entry(model)
        return self._dearest if found is None else found.price

    def min_cacheable_tokens(self, model: str) -> int:
        """The shortest prefix the API caches for this model (unknown: the largest Lockgate knows)."""
        found = self.entry(model)
        return UNKNOWN_MODEL_MIN_CACHEABLE if found is None else found.min_cacheable_tokens

    def cost_usd(self, model: str, usage: Usage, cache_ttl: str = "5m", *, batch: bool = False) -> float:
        """Dollars for one call's usage by ``model`` (``lockgate.model.pricing.cost_usd``)."""
        return cost_usd(self.price(model), usage, cache_ttl, batch=batch)

    def estimate_usd(
        self,
        model: str,
        input_tokens_estimate: int,
        max_output_tokens: int,
        *,
        cache_ttl: str | None = None,
        batch: bool = False,
    ) -> float:
        """A cautious upper bound for one call by ``model`` (``lockgate.model.pricing.estimate_usd``)."""
        return estimate_usd(
            self.price(model), input_tokens_estimate, max_output_tokens, cache_ttl=cache_ttl, batch=batch
        )

    @cached_property
    def _dearest(self) -> Price:
        # A provider table without entries (Bedrock priced by nothing) still never under-counts.
        return dearest([entry.price for entry in self.entries.values()] or PRICES.values())


def _entry(name: str, sourced: Sourced) -> ModelEntry:
    return ModelEntry(sourced.price, min_cacheable_tokens(name), sourced.source, sourced.as_of)
