"""The price table and per-call cost: the issue's worked example, cache TTLs, batch, long prompts."""

from __future__ import annotations

import pytest

from lockgate.model.client import Usage
from lockgate.model.price_table import PriceTable
from lockgate.model.pricing import PRICES, PRICES_AS_OF, Price, cost_usd, dearest, estimate_usd

PUBLISHED = PriceTable.published()

OPUS_CLASS = Price(input=4.00, output=20.00, cache_read=0.20)


def test_worked_example_without_cache_costs_half_a_dollar() -> None:
    # Given an Opus-class model at $4/$20 per MTok
    # When a call bills 50,000 input and 15,000 output tokens
    cost = cost_usd(OPUS_CLASS, Usage(input_tokens=50_000, output_tokens=15_000))
    # Then it costs exactly $0.500
    assert cost == 0.500


def test_worked_example_with_cache_reads_costs_0_348() -> None:
    # Given the same call with 40,000 of the 50,000 input tokens read from cache at $0.20/MTok
    usage = Usage(input_tokens=10_000, cache_read_input_tokens=40_000, output_tokens=15_000)
    # Then it costs exactly $0.348
    assert cost_usd(OPUS_CLASS, usage) == 0.348


def test_the_table_prices_opus_5_5_like_the_worked_example() -> None:
    opus = PUBLISHED.price("claude-opus-5-5")
    assert (opus.input, opus.output, opus.cache_read) == (
        OPUS_CLASS.input,
        OPUS_CLASS.output,
        OPUS_CLASS.cache_read,
    )
    assert PUBLISHED.cost_usd("claude-opus-5-5", Usage(input_tokens=50_000, output_tokens=15_000)) == 0.5
    assert PRICES_AS_OF


def test_a_one_hour_cache_write_costs_2x_input_and_five_minutes_1_25x() -> None:
    # Given 1M tokens written to the cache on a $4 input model
    usage = Usage(cache_creation_input_tokens=1_000_000)
    # Then the 5-minute write is $5 and the 1-hour write $8; the default is 5 minutes
    assert cost_usd(OPUS_CLASS, usage, "5m") == 5.0
    assert cost_usd(OPUS_CLASS, usage, "1h") == 8.0
    assert cost_usd(OPUS_CLASS, usage) == 5.0


def test_batch_halves_every_line() -> None:
    usage = Usage(
        input_tokens=10_000,
        cache_creation_input_tokens=5_000,
        cache_read_input_tokens=40_000,
        output_tokens=15_000,
    )
    for ttl in ("5m", "1h"):
        assert cost_usd(OPUS_CLASS, usage, ttl, batch=True) == pytest.approx(
            cost_usd(OPUS_CLASS, usage, ttl) / 2
        )
    assert cost_usd(OPUS_CLASS, Usage(input_tokens=50_000, output_tokens=15_000), batch=True) == 0.25


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        # 100,000 prompt tokens is still the low band: $0.10 in, $0.50 out
        (Usage(input_tokens=100_000, output_tokens=10_000), 0.015),
        # one more prompt token: every token of the call at $0.50 / $2.50
        (Usage(input_tokens=100_001, output_tokens=10_000), 0.0750005),
        # cache reads count toward the prompt size and switch their own rate to $0.05
        (Usage(input_tokens=1_000, cache_read_input_tokens=100_000, output_tokens=0), 0.0055),
        # cache writes too, at 1.25 x the long-prompt input price
        (Usage(input_tokens=0, cache_creation_input_tokens=200_000, output_tokens=0), 0.125),
    ],
)
def test_haiku_5_5_switches_to_long_prompt_rates_over_100k_tokens(usage: Usage, expected: float) -> None:
    assert PUBLISHED.cost_usd("claude-haiku-5-5", usage) == pytest.approx(expected, abs=1e-6)


def test_dated_ids_get_their_family_price_and_the_long_prompt_tier() -> None:
    assert PUBLISHED.price("claude-haiku-5-5-20261007") is PRICES["claude-haiku-5-5"]
    assert PUBLISHED.price("claude-opus-5-5-20260601") is PRICES["claude-opus-5-5"]  # not claude-opus-5


def test_an_unknown_model_is_priced_as_the_dearest() -> None:
    usage = Usage(
        input_tokens=150_000,
        cache_creation_input_tokens=10_000,
        cache_read_input_tokens=20_000,
        output_tokens=8_000,
    )
    unknown = PUBLISHED.cost_usd("some-future-model", usage, "1h")
    assert PUBLISHED.price("some-future-model") is dearest(PRICES.values())
    assert all(unknown >= PUBLISHED.cost_usd(name, usage, "1h") for name in PRICES)


def test_estimate_is_an_upper_bound_of_any_usage_within_the_limits() -> None:
    # Given a call sending at most 20,000 prompt tokens and capped at 2,000 output tokens
    sonnet = PRICES["claude-sonnet-4-6"]
    bound_plain = estimate_usd(sonnet, 20_000, 2_000)
    bound_cached = PUBLISHED.estimate_usd("claude-sonnet-4-6", 20_000, 2_000, cache_ttl="1h")
    # Then every split of that prompt between cache write/read/plain costs no more
    assert bound_plain == 0.09
    assert bound_cached == 0.15  # the whole prompt written to a 1-hour cache
    for written in (0, 5_000, 20_000):
        usage = Usage(input_tokens=20_000 - written, cache_creation_input_tokens=written, output_tokens=2_000)
        assert cost_usd(sonnet, usage, "1h") <= bound_cached
    # And the long-prompt tier applies to the estimate too
    assert PUBLISHED.estimate_usd("claude-haiku-5-5", 200_000, 0) == 0.1


def test_estimate_refuses_negative_tokens() -> None:
    with pytest.raises(ValueError):
        PUBLISHED.estimate_usd("claude-haiku-4-5", -1, 10)


def test_given_a_dated_id_then_its_price_cache_minimum_and_knowing_come_from_one_lookup() -> None:
    from lockgate.config import ModelConfig
    from lockgate.model.prompt_cache import UNKNOWN_MODEL_MIN_CACHEABLE

    # Given a deployment that prices its own model, with its own cache minimum
    table = PriceTable.from_config({"claude-x": ModelConfig(1.0, 5.0, 0.1, min_cacheable_tokens=2048)})
    # When a reply names a dated id of it, Then every answer is that one entry's
    entry = table.entry("claude-x-20261201")
    assert entry is table.entries["claude-x"] and table.knows("claude-x-20261201")
    assert table.price("claude-x-20261201") is entry.price == Price(1.0, 5.0, 0.1)
    assert table.min_cacheable_tokens("claude-x-20261201") == 2048
    # And an id nothing prices is unknown everywhere: the dearest price, the largest minimum
    assert table.entry("claude-y") is None and not table.knows("claude-y")
    assert table.price("claude-y") == dearest(entry.price for entry in table.entries.values())
    assert table.min_cacheable_tokens("claude-y") == UNKNOWN_MODEL_MIN_CACHEABLE


def test_given_a_one_hour_request_then_its_five_minute_writes_cost_the_five_minute_price() -> None:
    # Given a "1h" request whose reply says 600k of its 1M written tokens were 5-minute writes
    # (the conversation's markers) and the rest the hour-long system prefix
    usage = Usage(cache_creation_input_tokens=1_000_000, cache_creation_5m_input_tokens=600_000)
    # Then 600k are priced at 1.25x and 400k at 2x the $4 input price
    assert cost_usd(OPUS_CLASS, usage, "1h") == 0.6 * 5.0 + 0.4 * 8.0
    # And a reply without the split is priced at the request's TTL, as before it existed
    assert cost_usd(OPUS_CLASS, Usage(cache_creation_input_tokens=1_000_000), "1h") == 8.0
