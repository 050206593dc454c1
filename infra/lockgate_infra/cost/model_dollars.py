"""The measured model calls priced at the deployment's provider: what ``lockgate cost`` reports.

The example traffic runs against the stub on Anthropic's wire format; its run records keep each
model's tokens, with cache writes split by lifetime. Priced here with the price table the worker
builds from the deployment's config (``PriceTable.for_deployment``): its ``[provider]``, on Bedrock
each model's endpoint kind, and ``[models]`` over them. A batched call's tokens are priced at the
full rate (the example traffic batches nothing): never under the bill.
"""

from __future__ import annotations

from collections.abc import Mapping

from lockgate.config import LockgateConfig
from lockgate.model.client import Usage
from lockgate.model.price_table import PriceTable
from lockgate.model.providers import provider as provider_named
from lockgate.model.usage import TOKEN_FIELDS


def model_usd(tokens_by_model: Mapping[str, Mapping[str, float]], prices: PriceTable) -> float:
    """Dollars for each model's summed tokens at ``prices`` (unsplit cache writes at the hour's rate)."""
    total = 0.0
    for model, counted in tokens_by_model.items():
        usage = Usage(**{name: int(counted.get(name, 0)) for name in TOKEN_FIELDS})
        total += prices.cost_usd(model, usage, "1h")
    return round(total, 6)


def priced_as(config: LockgateConfig) -> tuple[PriceTable, str]:
    """The deployment's price table and how the report names it (e.g. "Amazon Bedrock prices")."""
    return PriceTable.for_deployment(config), f"{provider_named(config.provider.name).title} prices"
