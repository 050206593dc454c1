"""The model provider: [provider] read and checked, each provider's SDK client against the stub's
wire formats, Bedrock's errors mapped to the same classes, and the model client unchanged on top."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest

from lockgate.capacity.admission import _endpoint_fault
from lockgate.clock import FixedClock
from lockgate.config import ProviderConfig, parse_config
from lockgate.errors import ConfigError
from lockgate.model.client import ModelClient, ModelError, ModelRequest
from lockgate.model.price_table import PriceTable
from lockgate.model.pricing import PRICES
from lockgate.model.sdk import sdk_factory
from lockgate_infra.stub.replies import Reply, StubError
from lockgate_infra.stub.server import StubAnthropic

LOG = logging.getLogger("lockgate.tests")
SONNET = "claude-sonnet-5-5"
BEDROCK_SONNET = "eu.anthropic.claude-sonnet-5-5-v1:0"
BEDROCK = ProviderConfig(name="bedrock", region="eu-west-1", bedrock_models={SONNET: BEDROCK_SONNET})
AWS = ProviderConfig(name="aws", region="eu-west-1", workspace_id="wrkspc_01test")
ANTHROPIC = ProviderConfig()
HELLO = Reply([{"type": "text", "text": "hello"}])


@pytest.fixture
def stub() -> Iterator[StubAnthropic]:
    with StubAnthropic(lambda _: HELLO) as server:
        yield server


def client(provider: ProviderConfig, stub: StubAnthropic, sleeps: list[float] | None = None) -> ModelClient:
    key = (lambda: "sk-test") if provider.uses_api_key else None
    return ModelClient(
        sdk_factory(provider, key, stub.base_url),
        FixedClock(1_000_000.0),
        LOG,  # type: ignore[arg-type]
        sleep=(sleeps if sleeps is not None else []).append,
        provider=provider,
    )


def ask(model: ModelClient) -> Any:
    request = ModelRequest(SONNET, "You answer.", [], [{"role": "user", "content": "hi"}], 64)
    return model.create(request, deadline=1_000_000.0 + 120)


# ---------------------------------------------------------------- [provider] in lockgate.toml


@pytest.mark.parametrize(
    ("table", "says"),
    [
        ({"name": "openai"}, "name must be one of anthropic, bedrock, aws"),
        ({"name": "aws"}, 'name = "aws" needs workspace_id'),
        ({"name": "aws", "workspace_id": "ws-1"}, "workspace_id must look like wrkspc_"),
        ({"name": "bedrock"}, 'name = "bedrock" needs [provider.bedrock_models]'),
        ({"name": "bedrock", "bedrock_models": {SONNET: "openai.gpt-5"}}, "is not a Bedrock model id"),
        ({"name": "bedrock", "region": "Ireland", "bedrock_models": {SONNET: BEDROCK_SONNET}}, "AWS region"),
        ({"region": "eu-west-1"}, 'region is for name = "bedrock" or "aws"'),
        ({"name": "bedrock", "workspace_id": "wrkspc_1", "bedrock_models": {SONNET: BEDROCK_SONNET}}, "aws"),
        ({"name": "anthropic", "key": "sk"}, "unknown key(s) ['key']"),
    ],
)
def test_given_a_wrong_provider_table_when_the_config_is_read_then_the_error_says_what_to_change(
    table: dict[str, Any], says: str
) -> None:
    with pytest.raises(ConfigError) as error:
        parse_config({"provider": table})
    assert says in str(error.value)


def test_given_no_provider_table_then_it_is_anthropics_api_with_its_key() -> None:
    provider = parse_config({}).provider
    assert (provider.name, provider.uses_api_key) == ("anthropic", True)


def test_given_a_bedrock_table_then_task_ids_map_to_bedrock_ids_and_no_key_is_needed() -> None:
    provider = parse_config(
        {"provider": {"name": "bedrock", "region": "eu-west-1", "bedrock_models": {SONNET: BEDROCK_SONNET}}}
    ).provider
    assert provider == BEDROCK
    assert (provider.wire_model_id(SONNET), provider.uses_api_key) == (BEDROCK_SONNET, False)
    with pytest.raises(ConfigError, match=r'\[provider.bedrock_models\] "claude-haiku-5-5"'):
        provider.require_model("claude-haiku-5-5", "task screen: screen_model")


# ---------------------------------------------------------------- prices per provider


def test_given_claude_platform_on_aws_then_its_prices_are_anthropics_standard_rates() -> None:
    aws = PriceTable.from_config({}, "aws")
    assert {name: aws.price(name) for name in PRICES} == dict(PRICES)


def test_given_bedrock_without_typed_in_prices_then_listed_models_are_priced_and_others_refused() -> None:
    # Given a Bedrock deployment with no [models] prices
    table = PriceTable.from_config({}, "bedrock", {SONNET: BEDROCK_SONNET})
    # Then the example's model is priced from the library, and a model it does not list is refused
    table.require(SONNET, "task support-inbox: model")
    assert table.entry(SONNET).source.startswith("genai-prices ")
    with pytest.raises(ConfigError, match=r'has no bedrock price.*\[models."claude-haiku-6".bedrock\]'):
        table.require("claude-haiku-6", "task support-inbox: model")


def test_given_a_bedrock_price_then_only_bedrock_uses_it_and_flat_prices_apply_everywhere() -> None:
    models = parse_config(
        {
            "models": {
                SONNET: {"bedrock": {"input": 2.2, "output": 11.0, "cache_read": 0.11}},
                "my-model": {"input": 1.0, "output": 2.0, "cache_read": 0.1},
            }
        }
    ).models
    bedrock = PriceTable.from_config(models, "bedrock")
    anthropic = PriceTable.from_config(models, "anthropic")
    assert (bedrock.price(SONNET).input, anthropic.price(SONNET).input) == (2.2, PRICES[SONNET].input)
    assert bedrock.price("my-model") == anthropic.price("my-model")


# ---------------------------------------------------------------- the SDK's clients against the stub


def test_given_bedrock_when_the_model_is_called_then_the_sdk_invokes_the_mapped_id_signed(
    stub: StubAnthropic,
) -> None:
    reply = ask(client(BEDROCK, stub))
    # The stub checked the SigV4 headers and the body's anthropic_version (bedrock-2023-05-31).
    assert (stub.wire, stub.bedrock_ids) == (["bedrock"], [BEDROCK_SONNET])
    assert (reply.model, reply.content) == (SONNET, HELLO.content)  # recorded as the task's id


def test_given_claude_platform_on_aws_when_called_then_it_is_the_messages_api_signed_for_the_workspace(
    stub: StubAnthropic,
) -> None:
    reply = ask(client(AWS, stub))
    assert (stub.wire, reply.model) == (["aws"], SONNET)


def test_given_bedrock_then_tokens_are_not_counted_and_nothing_is_sent(stub: StubAnthropic) -> None:
    request = ModelRequest(SONNET, "You answer.", [], [{"role": "user", "content": "hi"}], 64)
    assert client(BEDROCK, stub).count_tokens(request, deadline=1_000_000.0 + 120) is None
    assert stub.calls == 0


@pytest.mark.parametrize("provider", [ANTHROPIC, BEDROCK, AWS], ids=lambda p: p.name)
def test_given_throttling_when_called_then_every_provider_retries_it_as_the_limiters_signal(
    stub: StubAnthropic, provider: ProviderConfig
) -> None:
    stub.set_model(lambda _: StubError(429, "rate_limit_error", "Too many requests"))
    sleeps: list[float] = []
    with pytest.raises(ModelError) as error:
        ask(client(provider, stub, sleeps))
    # Bedrock's ThrottlingException (x-amzn-ErrorType) is the API's rate_limit_error: retried with
    # the same backoff, and not an endpoint fault (the breaker stays closed; the limiter decides).
    assert (error.value.kind, error.value.status, error.value.retryable) == ("rate_limit_error", 429, True)
    assert not _endpoint_fault(error.value)
    assert (stub.calls, len(sleeps)) == (4, 3)


@pytest.mark.parametrize(
    ("status", "kind", "retryable", "fault"),
    [
        (503, "overloaded_error", True, True),
        (500, "api_error", True, True),
        (403, "permission_error", False, False),
        (404, "not_found_error", False, False),
        (400, "invalid_request_error", False, False),
    ],
)
def test_given_a_bedrock_error_then_it_is_classified_as_the_api_error_that_means_the_same(
    stub: StubAnthropic, status: int, kind: str, retryable: bool, fault: bool
) -> None:
    stub.set_model(lambda _: StubError(status, kind, "no"))
    with pytest.raises(ModelError) as error:
        ask(client(BEDROCK, stub))
    assert (error.value.kind, error.value.retryable, _endpoint_fault(error.value)) == (kind, retryable, fault)


def test_given_an_unsigned_bedrock_request_then_the_stub_refuses_it_as_aws_would(stub: StubAnthropic) -> None:
    import anthropic

    unsigned = anthropic.AnthropicBedrock(api_key="key", aws_region="eu-west-1", base_url=stub.base_url)
    with pytest.raises(anthropic.PermissionDeniedError) as error:
        unsigned.messages.create(
            model=BEDROCK_SONNET,
            max_tokens=8,
            messages=[{"role": "user", "content": "x"}],
        )
    assert "AWS4-HMAC-SHA256" in str(error.value)


# ---------------------------------------------------------------- IAM and secrets per provider


def test_given_bedrock_ids_then_provider_arns_names_each_profile_and_its_model_exactly() -> None:
    from lockgate_infra.cli.provider_arns import bedrock_arns

    profile = "arn:aws:bedrock:eu-west-1:123456789012:application-inference-profile/a1b2c3"
    provider = ProviderConfig(
        name="bedrock",
        bedrock_models={
            SONNET: BEDROCK_SONNET,
            "claude-haiku-4-5": "anthropic.claude-haiku-4-5",
            "x": profile,
        },
    )
    assert bedrock_arns(provider, "123456789012", "eu-west-1") == [
        "arn:aws:bedrock:eu-west-1:123456789012:inference-profile/eu.anthropic.claude-sonnet-5-5-v1:0",
        # A cross-Region profile sends each request to one of its Regions: the model in any Region.
        "arn:aws:bedrock:*::foundation-model/anthropic.claude-sonnet-5-5-v1:0",
        "arn:aws:bedrock:eu-west-1::foundation-model/anthropic.claude-haiku-4-5",
        profile,
    ]
    with pytest.raises(ConfigError, match="12-digit"):
        bedrock_arns(provider, "me", "eu-west-1")


@pytest.mark.parametrize(("provider", "asks_for_key"), [(ANTHROPIC, True), (BEDROCK, False), (AWS, False)])
def test_given_a_provider_then_lockgate_secrets_asks_for_the_model_key_only_on_anthropics_api(
    provider: ProviderConfig, asks_for_key: bool
) -> None:
    from dataclasses import replace

    from lockgate_infra.cli.stack_secrets import MODEL_KEY, StackSecrets

    config = replace(parse_config({}), provider=provider)
    names = {entry.name for entry in StackSecrets(None, config, None).entries()}
    assert (MODEL_KEY in names) is asks_for_key
