"""The measured model calls priced at the deployment's provider: what ``lockgate cost`` reports.

The example traffic runs against the stub on the checkout's own config (Anthropic's API); its run
records keep each model's dollars and tokens. Each model's dollars are scaled by what its tokens
cost on the deployment's price table against the table that priced them (``PriceTable.for_deployment``
of each config: its ``[provider]``, on Bedrock each model's endpoint kind, ``[models]`` over them).
The ratio carries each call's own details over (its cache writes' lifetimes, a batch's discount):
a provider's premium is on every line alike (Bedrock's regional 10%).
"""

from __future__ import annotations

from collections.abc import Mapping

from lockgate.config import LockgateConfig
from lockgate.model.client import Usage
from lockgate.model.price_table import PriceTable
from lockgate.model.providers import provider as provider_named
from lockgate.model.usage import TOKEN_FIELDS


def model_usd(by_model: Mapping[str, Mapping[str, float]], prices: PriceTable, recorded: PriceTable) -> float:
    """The run records' dollars per model (``usd`` and its tokens) at ``prices`` instead of ``recorded``."""
    total = 0.0
    for model, counted in by_model.items():
        usage = Usage(**{name: int(counted.get(name, 0)) for name in TOKEN_FIELDS})
        was = recorded.cost_usd(model, usage)
        ratio = prices.cost_usd(model, usage) / was if was else 1.0
        total += float(counted.get("usd", 0.0)) * ratio
    return round(total, 6)


def priced_as(config: LockgateConfig) -> tuple[PriceTable, str]:
    """The deployment's price table and how the report names it (e.g. "Amazon Bedrock prices")."""
    return PriceTable.for_deployment(config), f"{provider_named(config.provider.name).title} prices"
