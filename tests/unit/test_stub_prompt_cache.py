"""The stub's prompt cache, as the API's: each model's minimum cacheable length, a prefix hashed as
sent (key order counts), several breakpoints billed as one read plus the writes after it, and the
TTL ordering rule."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import pytest

from lockgate.clock import FixedClock
from lockgate.model.prompt_cache import min_cacheable_tokens
from lockgate_infra.stub import StubAnthropic, estimate_tokens
from lockgate_infra.stub.client import stub_client
from shop.model import scripted_model

FIVE_MINUTES = {"type": "ephemeral"}
ONE_HOUR = {"type": "ephemeral", "ttl": "1h"}


def text_of(tokens: int) -> str:
    """A system text whose block is about ``tokens`` tokens in the stub's estimate."""
    return "x" * (tokens * 4)


@pytest.fixture
def client(clock: FixedClock) -> Iterator[anthropic.Anthropic]:
    with StubAnthropic(scripted_model(), clock=clock) as stub:  # each model's published minimum
        yield stub_client(stub.base_url, "test", timeout=5)


def usage_of(client: anthropic.Anthropic, model: str, system: list[Any], messages: list[Any]) -> Any:
    reply = client.messages.create(model=model, max_tokens=64, system=system, messages=messages)
    return reply.usage


HELLO = [{"role": "user", "content": [{"type": "text", "text": "Hello."}]}]


def test_the_published_minimums_differ_by_model() -> None:
    assert min_cacheable_tokens("claude-opus-5") == 512
    assert min_cacheable_tokens("claude-sonnet-5-5") == 1024
    assert min_cacheable_tokens("claude-sonnet-4-5-20250929") == 1024  # dated ids by prefix
    assert min_cacheable_tokens("claude-haiku-4-5") == 4096
    assert min_cacheable_tokens("claude-unknown-9") == 4096  # unknown: the largest, never over-promise


@pytest.mark.parametrize(
    ("model", "cached"),
    [("claude-opus-5", True), ("claude-sonnet-5-5", False), ("claude-haiku-4-5", False)],
)
def test_a_prompt_of_about_800_tokens_is_cached_only_where_the_models_minimum_allows(
    client: anthropic.Anthropic, model: str, cached: bool
) -> None:
    # Given a marked system prompt of ~800 tokens: over Opus 5's 512, under Sonnet's 1,024
    system = [{"type": "text", "text": text_of(800), "cache_control": FIVE_MINUTES}]
    # When it is sent twice
    first, second = (usage_of(client, model, system, HELLO) for _ in range(2))
    # Then it is written and read only for the model whose minimum it reaches
    assert bool(first.cache_creation_input_tokens) is cached
    assert bool(second.cache_read_input_tokens) is cached
    if not cached:
        assert second.input_tokens == first.input_tokens > 800


def test_a_prefix_that_differs_only_in_key_order_is_a_miss(client: anthropic.Anthropic) -> None:
    # Given a cached conversation whose newest block is a tool_result
    system = [{"type": "text", "text": text_of(1200)}]
    use = {"type": "tool_use", "id": "toolu_1", "name": "read_email", "input": {"a": 1, "b": 2}}
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "{}"}
    turns: list[Any] = [
        HELLO[0],
        {"role": "assistant", "content": [use]},
        {"role": "user", "content": [{**result, "cache_control": FIVE_MINUTES}]},
    ]
    written = usage_of(client, "claude-sonnet-5-5", system, turns).cache_creation_input_tokens
    assert written > 1024
    # When the same content is sent again, once as it was and once with a tool_use's keys reordered
    same = usage_of(client, "claude-sonnet-5-5", system, turns)
    reordered = {**turns[1], "content": [{**use, "input": {"b": 2, "a": 1}}]}
    moved = usage_of(client, "claude-sonnet-5-5", system, [turns[0], reordered, turns[2]])
    # Then only the byte-identical one reads the cache, as with the API
    assert same.cache_read_input_tokens == written
    assert moved.cache_read_input_tokens == 0 and moved.cache_creation_input_tokens == written


def test_two_breakpoints_bill_one_read_and_the_writes_after_it(client: anthropic.Anthropic) -> None:
    # Given a cached system prompt (1h) and a conversation breakpoint (5m) on a new message
    system = [{"type": "text", "text": text_of(1500), "cache_control": ONE_HOUR}]
    usage_of(client, "claude-sonnet-5-5", system, HELLO)
    message = {"type": "text", "text": "y" * 2000, "cache_control": FIVE_MINUTES}
    usage = usage_of(client, "claude-sonnet-5-5", system, [{"role": "user", "content": [message]}])
    # Then the system prefix is read and only the message is written, at the 5-minute rate
    assert usage.cache_read_input_tokens == estimate_tokens(
        {"system": {"type": "text", "text": text_of(1500)}}
    )
    assert usage.cache_creation is not None
    assert usage.cache_creation.ephemeral_1h_input_tokens == 0
    assert usage.cache_creation.ephemeral_5m_input_tokens == usage.cache_creation_input_tokens > 0
    assert usage.input_tokens == 0


def test_a_1h_breakpoint_after_a_5m_one_is_refused(client: anthropic.Anthropic) -> None:
    system = [{"type": "text", "text": "Be brief.", "cache_control": FIVE_MINUTES}]
    late = [{"role": "user", "content": [{"type": "text", "text": "Hi", "cache_control": ONE_HOUR}]}]
    with pytest.raises(anthropic.BadRequestError, match="1h"):
        usage_of(client, "claude-sonnet-5-5", system, late)
