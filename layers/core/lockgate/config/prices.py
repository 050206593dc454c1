"""Reading ``[models."<id>"]``: the deployment's own prices for model ids, checked.

Only the numbers are checked here; which ids need a price (the tasks' models, ``[capacity.models]``)
is checked where the published table is known, when a function starts (``lockgate.model.price_table``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from lockgate.config.files import no_unknown, positive_int, table
from lockgate.config.model import ModelConfig, ProviderPrice
from lockgate.config.provider import PROVIDER_NAMES
from lockgate.errors import ConfigError

PRICE_KEYS = ("input", "output", "cache_read")
# What a model id looks like: no spaces or quotes (Bedrock's ids carry dots and a colon).
MODEL_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/@-]{0,199}$")
# An alias (-latest) or a dated id: the API answers as the dated id, so the family is what to price.
ALIAS_OR_DATE = re.compile(r"-(latest|\d{8})$")


def parse_models(body: Mapping[str, Any], origin: str) -> dict[str, ModelConfig]:
    """``[models."<id>"]`` tables: input, output and cache_read (positive), min_cacheable_tokens optional,
    and the same three per provider (``[models."<id>".bedrock]``), with or without the flat ones."""
    return {model: _model(model, body[model], f'{origin}: [models."{model}"]') for model in body}


def _model(model: str, value: Any, where: str) -> ModelConfig:
    entry = table(value, where)
    if not MODEL_ID.match(model):
        raise ConfigError(f"{where}: not a model id (letters, digits and . _ : / @ -, no spaces)")
    if model.endswith("-latest"):
        # Replies name the dated model, which "<family>-latest" does not match as a prefix.
        raise ConfigError(
            f'{where}: price the family instead, [models."{family(model)}"]: it covers the alias '
            "and the dated id the API answers as"
        )
    no_unknown(entry, {*PRICE_KEYS, "min_cacheable_tokens", *PROVIDER_NAMES}, where)
    providers = {
        name: _prices(table(entry[name], f"{where}.{name}"), f"{where}.{name}")
        for name in PROVIDER_NAMES
        if name in entry
    }
    # The flat prices apply on every provider; they may be left out where a provider's table is given.
    flat = None
    if any(key in entry for key in PRICE_KEYS) or not providers:
        flat = _prices({key: entry[key] for key in PRICE_KEYS if key in entry}, where)
    minimum = entry.get("min_cacheable_tokens")
    return ModelConfig(
        input=flat.input if flat else None,
        output=flat.output if flat else None,
        cache_read=flat.cache_read if flat else None,
        min_cacheable_tokens=None
        if minimum is None
        else positive_int(minimum, f"{where} min_cacheable_tokens"),
        providers=providers,
    )


def _prices(entry: Mapping[str, Any], where: str) -> ProviderPrice:
    no_unknown(entry, set(PRICE_KEYS), where)
    missing = [key for key in PRICE_KEYS if key not in entry]
    if missing:
        raise ConfigError(
            f"{where}: {', '.join(missing)} missing (input, output and cache_read are USD per million tokens)"
        )
    return ProviderPrice(*(_usd(entry[key], f"{where} {key}") for key in PRICE_KEYS))


def family(model: str) -> str:
    """A model id without its alias or date suffix: what a ``[models]`` entry should name."""
    return ALIAS_OR_DATE.sub("", model)


def _usd(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
        raise ConfigError(f"{where} must be a positive number of USD per million tokens, got {value!r}")
    return float(value)
