"""The price table: published prices with the config's [models] over them, dated ids by prefix."""

from __future__ import annotations

from pathlib import Path

import pytest

from lockgate.config import load_config, parse_config
from lockgate.errors import ConfigError
from lockgate.model.client import Usage
from lockgate.model.price_table import PriceTable
from lockgate.model.pricing import PRICES, Price, cost_usd
from lockgate.model.prompt_cache import UNKNOWN_MODEL_MIN_CACHEABLE
from tests.unit.test_config_models import HAIKU_6, models

ROOT = Path(__file__).resolve().parents[2]


def test_config_prices_price_the_family_its_alias_and_its_dated_ids() -> None:
    # Given [models."claude-haiku-6"]
    table = PriceTable.from_config(parse_config(models(**{"claude-haiku-6": HAIKU_6})).models)
    usage = Usage(input_tokens=10_000, cache_creation_input_tokens=2_000, cache_read_input_tokens=5_000,
                  output_tokens=1_000)  # fmt: skip
    # Then the alias a task names and the dated id the API answers as both cost the configured rates:
    # 10k x $0.80 + 1k x $4 + 2k x $0.80 x 1.25 (a 5-minute write) + 5k x $0.08, per million
    configured = Price(0.80, 4.00, 0.08)
    for model in ("claude-haiku-6", "claude-haiku-6-latest", "claude-haiku-6-20270101"):
        assert table.knows(model)
        assert table.price(model) == configured
        assert table.cost_usd(model, usage) == cost_usd(configured, usage) == 0.0144
    # And the published ids keep their prices; a family without a published cacheable minimum gets
    # the largest, so nothing is assumed cached that the API might not cache
    assert table.price("claude-sonnet-5-5") is PRICES["claude-sonnet-5-5"]
    assert table.min_cacheable_tokens("claude-haiku-6-latest") == UNKNOWN_MODEL_MIN_CACHEABLE
    # And a model still unknown is priced as the dearest: a cap never under-counts
    assert not table.knows("claude-haiku-7")
    assert table.cost_usd("claude-haiku-7", usage) >= max(table.cost_usd(m, usage) for m in PRICES)


def test_an_entry_for_a_published_id_replaces_its_price_and_a_given_minimum_is_used() -> None:
    raw = models(**{"claude-sonnet-5-5": {"input": 1.5, "output": 7.5, "cache_read": 0.15,
                                          "min_cacheable_tokens": 2048}})  # fmt: skip
    table = PriceTable.from_config(parse_config(raw).models)
    assert table.price("claude-sonnet-5-5-20261101") == Price(1.5, 7.5, 0.15)
    assert table.min_cacheable_tokens("claude-sonnet-5-5") == 2048
    assert table.price("claude-sonnet-5") is PRICES["claude-sonnet-5"]  # its shorter sibling is untouched
    # And an id Lockgate has no minimum for gets the largest it knows (nothing assumed cached)
    other = PriceTable.from_config(parse_config(models(**{"my-gateway-model": HAIKU_6})).models)
    assert other.min_cacheable_tokens("my-gateway-model") == UNKNOWN_MODEL_MIN_CACHEABLE


def test_the_published_table_matches_dated_ids_by_prefix_longest_first() -> None:
    table = PriceTable.published()
    assert table.knows("claude-sonnet-4-5-20250929")
    assert table.price("claude-opus-5-5-20260601") is PRICES["claude-opus-5-5"]  # not claude-opus-5
    assert not table.knows("claude-haiku-6-latest")
    assert not table.knows("claude-sonnet")  # a family prefix is not an id


def test_the_shipped_config_builds_its_price_table() -> None:
    # Its [capacity.models] ids all have prices (else the worker would refuse to start)
    config = load_config(ROOT / "lockgate.toml")
    table = PriceTable.for_deployment(config)
    assert all(table.knows(model) for model in config.capacity.models)


def test_an_unknown_id_is_refused_with_what_to_do_then_every_known_id_config_ones_included() -> None:
    table = PriceTable.from_config(parse_config(models(**{"my-gateway-model": HAIKU_6})).models)
    with pytest.raises(ConfigError) as refused:
        table.require("claude-haiku-7-20270301", "where:")
    assert str(refused.value) == (
        'where: "claude-haiku-7-20270301" has no price: use a known id, or give its prices in '
        'lockgate.toml as [models."claude-haiku-7"] with input, output and cache_read in USD per million '
        "tokens. Known ids (dated ids such as claude-sonnet-4-5-20250929 match their family): "
        + ", ".join([*PRICES, "my-gateway-model"])
    )
    table.require("my-gateway-model", "where:")  # known: no error
