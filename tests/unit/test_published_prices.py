"""The committed price table against the pinned genai-prices, and Bedrock's two endpoint kinds."""

from __future__ import annotations

import datetime as dt

import pytest
from genai_prices import data_snapshot

from lockgate.config import load_config
from lockgate.model import published_prices as published
from lockgate.model.price_table import PriceTable
from lockgate.model.pricing import OWN_PRICES, bedrock_endpoint, endpoint_prices, matching_name
from lockgate_infra.prices.generate import ROOT, read_library

# What the docs, tests and `lockgate local --provider bedrock` give as Bedrock ids, each kind.
BEDROCK_IDS = [
    "global.anthropic.claude-sonnet-5-5-v1:0",
    "eu.anthropic.claude-sonnet-5-5-v1:0",
    "us.anthropic.claude-sonnet-5-5-v1:0",
    "anthropic.claude-sonnet-5-5-v1:0",
    "us.anthropic.claude-haiku-4-5-20251001-v1:0",
    "global.anthropic.claude-haiku-4-5-20251001-v1:0",
    "apac.anthropic.claude-haiku-5-5-v1:0",
    "eu.anthropic.claude-sonnet-4-5-20250929-v1:0",
]


def test_given_the_pinned_library_when_read_again_then_the_committed_table_agrees() -> None:
    # Given the library installed from the lock, read as of the day the table says it was read
    version, tables = read_library(dt.date.fromisoformat(published.READ_ON))
    # Then the committed table has its version, its prices and its sources (else: make prices)
    assert version == published.LIBRARY_VERSION, "the lock moved genai-prices: run make prices"
    assert {e: {n: x.price for n, x in t.items()} for e, t in tables.items()} == published.PRICES
    assert {
        e: {n: (x.library_id, x.refs, x.since) for n, x in t.items()} for e, t in tables.items()
    } == published.LISTED


def test_given_the_hand_table_then_it_holds_only_what_the_library_lacks_each_with_a_source() -> None:
    for endpoint, table in OWN_PRICES.items():
        for name, (_, source, as_of) in table.items():
            assert name not in published.PRICES.get(endpoint, {}), f"{endpoint} {name}: the library has it"
            assert source and dt.date.fromisoformat(as_of)


@pytest.mark.parametrize("bedrock_id", BEDROCK_IDS)
def test_given_a_bedrock_id_then_its_endpoint_kind_and_price_are_the_librarys_own(bedrock_id: str) -> None:
    # Given the library's own matcher for the id on its Bedrock provider
    _, model = data_snapshot.get_snapshot().find_provider_model(bedrock_id, None, "aws", None)
    # Then Lockgate picks the same endpoint kind, and that endpoint's price for the family
    endpoint = bedrock_endpoint(bedrock_id)
    assert model.id.startswith(endpoint.removeprefix("bedrock-") + ".anthropic.")
    family = matching_name(endpoint_prices(endpoint), bedrock_id.split("anthropic.", 1)[1].rsplit("-v", 1)[0])
    assert family is not None
    assert published.LISTED[endpoint][family][0] == model.id


def test_given_the_examples_on_bedrock_with_no_prices_then_each_model_is_priced_on_both_kinds() -> None:
    # Given every model the example workflows name, on a Bedrock deployment without [models] prices
    config = load_config(ROOT / "lockgate.toml")
    models = {"claude-sonnet-5-5", "claude-haiku-4-5", "claude-haiku-5-5"}
    for model in models:
        regional = PriceTable.published("bedrock", {model: f"eu.anthropic.{model}-v1:0"})
        global_ = PriceTable.published("bedrock", {model: f"global.anthropic.{model}-v1:0"})
        # Then both endpoint kinds price it, the regional one at AWS's premium
        assert regional.knows(model) and global_.knows(model)
        assert regional.price(model).input > global_.price(model).input
    assert not config.models, "the example ships no typed-in prices"


def test_given_sonnet_5_5_then_the_issues_figures_hold() -> None:
    anthropic, global_, regional = (
        published.PRICES[e]["claude-sonnet-5-5"] for e in ("anthropic", "bedrock-global", "bedrock-regional")
    )
    assert (anthropic.input, anthropic.output) == (global_.input, global_.output) == (2.0, 10.0)
    assert (regional.input, regional.output) == (2.2, 11.0)
