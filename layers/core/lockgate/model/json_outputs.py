"""Structured outputs (JSON outputs): which models constrain their reply to a JSON schema.

With ``output_config.format`` of type ``json_schema`` the API decodes the reply under the schema,
so the text is one JSON value that matches it. Older or unknown model ids do not accept the
parameter (the API answers 400); for them ``lockgate.agent.structured`` asks for JSON in the
prompt and extracts it tolerantly.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lockgate.model.pricing import model_entry

# Models documented as supporting JSON outputs (platform.claude.com, "Structured outputs"): the
# Claude 4.5 generation onwards, and Opus 4.1. Dated ids match by prefix.
JSON_OUTPUT_MODELS: dict[str, bool] = {
    name: True
    for name in (
        "claude-opus-5-5",
        "claude-opus-5",
        "claude-opus-4-8",
        "claude-opus-4-7",
        "claude-opus-4-6",
        "claude-opus-4-5",
        "claude-opus-4-1",
        "claude-sonnet-5-5",
        "claude-sonnet-5",
        "claude-sonnet-4-6",
        "claude-sonnet-4-5",
        "claude-haiku-5-5",
        "claude-haiku-4-5",
    )
}


def supports_json_outputs(model: str) -> bool:
    """Whether ``model`` takes ``output_config.format`` (unknown ids: no, so they get the fallback)."""
    return model_entry(JSON_OUTPUT_MODELS, model, False)


def json_output_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A pydantic JSON schema in the form the API constrains decoding with (the SDK's own transform).

    The API supports a subset of JSON Schema: the SDK moves what it cannot enforce (patterns,
    bounds) into descriptions and closes every object; our pydantic validation still checks them.
    """
    from anthropic import transform_schema  # the worker has the SDK; imported only when extracting

    return dict(transform_schema(dict(schema)))
