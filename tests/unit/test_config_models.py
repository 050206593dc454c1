"""[models] in lockgate.toml: each id's prices parsed and checked, mistakes refused in one line."""

from __future__ import annotations

from typing import Any

import pytest

from lockgate.config import ModelConfig, parse_config
from lockgate.errors import ConfigError

HAIKU_6 = {"input": 0.80, "output": 4.00, "cache_read": 0.08}


def models(**entries: Any) -> dict[str, Any]:
    return {"models": entries}


def test_a_models_table_gives_prices_and_an_optional_cacheable_minimum() -> None:
    config = parse_config(
        {
            "models": {
                "claude-haiku-6": HAIKU_6,
                "my-gateway-model": {**HAIKU_6, "min_cacheable_tokens": 1024},
            }
        }
    )
    assert config.models == {
        "claude-haiku-6": ModelConfig(0.80, 4.00, 0.08),
        "my-gateway-model": ModelConfig(0.80, 4.00, 0.08, min_cacheable_tokens=1024),
    }
    assert parse_config({}).models == {}


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            {**HAIKU_6, "input": 0},
            'lockgate.toml: [models."m"] input must be a positive number of USD per million tokens, got 0',
        ),
        (
            {**HAIKU_6, "output": -4},
            'lockgate.toml: [models."m"] output must be a positive number of USD per million tokens, got -4',
        ),
        (
            {**HAIKU_6, "cache_read": "0.08"},
            'lockgate.toml: [models."m"] cache_read must be a positive number of USD per million tokens, '
            "got '0.08'",
        ),
        (
            {**HAIKU_6, "input": float("inf")},
            'lockgate.toml: [models."m"] input must be a positive number of USD per million tokens, got inf',
        ),
        (
            {**HAIKU_6, "input": True},
            'lockgate.toml: [models."m"] input must be a positive number of USD per million tokens, got True',
        ),
        (
            {"input": 0.8},
            'lockgate.toml: [models."m"]: output, cache_read missing '
            "(input, output and cache_read are USD per million tokens)",
        ),
        (
            {**HAIKU_6, "cache_write": 1.0},
            "lockgate.toml: [models.\"m\"]: unknown key(s) ['cache_write']",
        ),
        (
            {**HAIKU_6, "min_cacheable_tokens": 0},
            'lockgate.toml: [models."m"] min_cacheable_tokens must be a positive whole number, got 0',
        ),
        (1.0, 'lockgate.toml: [models."m"] must be a table'),
    ],
)
def test_price_mistakes_are_refused_in_one_line_naming_the_key(entry: Any, message: str) -> None:
    with pytest.raises(ConfigError) as refused:
        parse_config(models(m=entry))
    assert str(refused.value) == message


def test_an_alias_is_refused_with_the_family_to_price_instead() -> None:
    # The API answers an alias with the dated id, which "-latest" does not match as a prefix.
    with pytest.raises(ConfigError) as refused:
        parse_config(models(**{"claude-haiku-6-latest": HAIKU_6}))
    assert str(refused.value) == (
        'lockgate.toml: [models."claude-haiku-6-latest"]: price the family instead, '
        '[models."claude-haiku-6"]: it covers the alias and the dated id the API answers as'
    )


def test_a_key_that_is_not_a_model_id_is_refused() -> None:
    with pytest.raises(ConfigError, match=r'\[models."claude haiku"\]: not a model id'):
        parse_config(models(**{"claude haiku": HAIKU_6}))
