"""A local stand-in for the Anthropic Messages API: real HTTP on 127.0.0.1, scripted models, token usage.

Only generic stand-ins live here; a workflow's own offline model is in its package (the shop's in
``workflows/shop/offline/``, triage's in ``workflows/triage/model.py``).
"""

from lockgate_infra.stub.accounting import PromptCache, count_input_tokens, estimate_tokens
from lockgate_infra.stub.judge import judge_model, with_judge
from lockgate_infra.stub.models import (
    ErrorSequence,
    Model,
    Reply,
    Scripted,
    StubError,
    malformed_args_model,
    max_tokens_model,
    pause_turn_model,
    refusal_model,
)
from lockgate_infra.stub.server import StubAnthropic

__all__ = [
    "ErrorSequence",
    "Model",
    "PromptCache",
    "Reply",
    "Scripted",
    "StubAnthropic",
    "StubError",
    "count_input_tokens",
    "estimate_tokens",
    "judge_model",
    "with_judge",
    "malformed_args_model",
    "max_tokens_model",
    "pause_turn_model",
    "refusal_model",
]
