"""A model call's span attributes, in OpenTelemetry's GenAI semantic conventions (and ours, ``lockgate.*``).

Names, counts, ids and dollars only: never a prompt, a message or a reply's text.
"""

from __future__ import annotations

from lockgate.model.client import ModelReply, ModelRequest
from lockgate.model.price_table import PriceTable
from lockgate.tracing import Attributes

# [provider] name → gen_ai.provider.name (Claude Platform on AWS is Anthropic's own API, billed by AWS).
PROVIDER_NAMES = {"anthropic": "anthropic", "bedrock": "aws.bedrock", "aws": "anthropic"}


def call_attributes(provider: str, task: str, request: ModelRequest) -> Attributes:
    """What a ``chat`` span knows before the call: who is asked, for which task, with what limit."""
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": PROVIDER_NAMES.get(provider, provider),
        "gen_ai.request.model": request.model,
        "gen_ai.request.max_tokens": request.max_tokens,
        "lockgate.provider": provider,
        "lockgate.task": task,
    }


def reply_attributes(reply: ModelReply, prices: PriceTable, cache_ttl: str) -> Attributes:
    """What the reply adds: the model that answered, tokens (cache reads and writes too), cost, cache."""
    usage = reply.usage
    cost = 0.0 if reply.cache_hit else prices.cost_usd(reply.model, usage, cache_ttl, batch=reply.batch)
    return {
        "gen_ai.response.model": reply.model,
        "gen_ai.response.id": reply.request_id,
        "gen_ai.response.finish_reasons": [reply.stop_reason],
        # The conventions count every input token here, cached ones too; Anthropic reports them apart.
        "gen_ai.usage.input_tokens": (
            usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens
        ),
        "gen_ai.usage.output_tokens": usage.output_tokens,
        "gen_ai.usage.cache_read.input_tokens": usage.cache_read_input_tokens,
        "gen_ai.usage.cache_creation.input_tokens": usage.cache_creation_input_tokens,
        "lockgate.cost_usd": round(cost, 6),
        "lockgate.response_cache.hit": reply.cache_hit,
        "lockgate.attempts": reply.attempts,
        "lockgate.fallback_from": reply.fallback_from,
    }
