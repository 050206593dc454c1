"""Scripted models for the stub server. A model is ``Callable[[dict], Reply | StubError]``.

- ``ErrorSequence(errors, then)``: each error in turn on successive calls, then delegates.
- ``Scripted(replies)``: exact replies in order (a 500 once they run out).
- ``max_tokens_model``: cut off mid tool call (stop_reason "max_tokens", tool_use input ``{}``).
- ``malformed_args_model``: breaks the first tool's schema, then corrects itself after an is_error result.
- ``refusal_model``, ``pause_turn_model``: the "refusal" and "pause_turn" stop reasons.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from lockgate_infra.stub.conversation import (
    JSON,
    ToolCall,
    find_call,
    messages,
    offered_tools,
    properties,
    required,
    text,
    tool_use,
)
from lockgate_infra.stub.replies import Model, Reply, StubError

__all__ = [
    "ByModel",
    "ErrorSequence",
    "Model",
    "Reply",
    "Scripted",
    "StubError",
    "malformed_args_model",
    "max_tokens_model",
    "pause_turn_model",
    "refusal_model",
]


class ErrorSequence:
    """Answers with each error in turn on successive calls, then delegates to ``then``."""

    def __init__(self, errors: Sequence[StubError], then: Model) -> None:
        self._errors = list(errors)
        self._then = then
        self._lock = threading.Lock()

    @property
    def remaining(self) -> int:
        """Errors not yet returned."""
        with self._lock:
            return len(self._errors)

    def __call__(self, request: JSON) -> Reply | StubError:
        with self._lock:
            if self._errors:
                return self._errors.pop(0)
        return self._then(request)


class ByModel:
    """Answers each request with the scripted model named by its ``model`` field, else ``default``."""

    def __init__(self, models: Mapping[str, Model], default: Model) -> None:
        self._models = dict(models)
        self._default = default

    def __call__(self, request: JSON) -> Reply | StubError:
        return self._models.get(str(request.get("model")), self._default)(request)


class Scripted:
    """Returns the given replies (or errors) in order; a 500 api_error once they run out."""

    def __init__(self, replies: Sequence[Reply | StubError]) -> None:
        self._replies = list(replies)
        self._lock = threading.Lock()

    def __call__(self, request: JSON) -> Reply | StubError:
        with self._lock:
            if self._replies:
                return self._replies.pop(0)
        return StubError(500, "api_error", "stub: the scripted model has no more replies")


def max_tokens_model(request: JSON) -> Reply:
    """Always cut off by max_tokens in the middle of a tool call: the call must never run."""
    tools = list(offered_tools(request))
    content = [text("Let me look that up for you.")]
    if tools:
        content.append(tool_use(request, 0, tools[0], {}))
    return Reply(content, "max_tokens")


def refusal_model(request: JSON) -> Reply:
    """Declines (stop_reason "refusal")."""
    del request
    return Reply([text("I can't help with that request.")], "refusal")


PAUSED_TEXT = "Working on it: checking the records"


def pause_turn_model(request: JSON) -> Reply:
    """Pauses once; given its paused turn back as the last (assistant) message, it finishes."""
    turns = messages(request)
    if turns and turns[-1].get("role") == "assistant":
        return Reply([text("...done. Everything checks out.")], "end_turn")
    return Reply([text(f"{PAUSED_TEXT}...")], "pause_turn")


# Wrong-typed values per JSON-schema type.
_WRONG = {
    "string": 1042,
    "integer": "not-a-number",
    "number": "not-a-number",
    "boolean": "maybe",
    "array": "x",
}


def _bad_arguments(tool: JSON) -> JSON:
    props = properties(tool)
    bad = {name: _WRONG.get(str(spec.get("type")), "x") for name, spec in props.items()}
    needed = required(tool)
    if len(needed) > 1:
        bad.pop(needed[-1], None)  # and one required argument missing
    return bad


def malformed_args_model(request: JSON) -> Reply:
    """Calls the first tool with schema-breaking arguments, corrects them after an is_error, then ends."""
    tools = offered_tools(request)
    if not tools:
        return Reply([text("I have no tools to call.")], "end_turn")
    name, tool = next(iter(tools.items()))
    bad = _bad_arguments(tool)
    first = find_call(request, name, bad)
    if first is None:
        return Reply([text(f"Calling {name}."), tool_use(request, 0, name, bad)], "tool_use")
    if first.result is None:
        return Reply([text("I am still waiting for the tool result.")], "end_turn")
    if not first.is_error:
        return Reply([text(f"{name} accepted my arguments: {first.result[:200]}")], "end_turn")
    fixed = corrected_arguments(tool, first.result)
    if fixed is None:
        return Reply(
            [text(f"I could not work out valid arguments for {name}: {first.result[:200]}")], "end_turn"
        )
    retry = find_call(request, name, fixed)
    if retry is None:
        return Reply(
            [text(f"Retrying {name} with corrected arguments."), tool_use(request, 0, name, fixed)],
            "tool_use",
        )
    return Reply([text(_outcome(name, retry))], "end_turn")


def _outcome(name: str, call: ToolCall) -> str:
    if call.is_error:
        return f"{name} still failed: {(call.result or '')[:200]}"
    return f"Done: {name} returned {(call.result or '')[:200]}"


def corrected_arguments(tool: JSON, error_text: str) -> JSON | None:
    """Valid-looking values for every required argument, or None if one cannot be inferred."""
    props = properties(tool)
    fixed: JSON = {}
    for name in required(tool) or list(props):
        value = _value_for(name, props.get(name, {}), error_text)
        if value is None:
            return None
        fixed[name] = value
    return fixed


def _value_for(name: str, spec: JSON, error_text: str) -> Any:
    if isinstance(spec.get("enum"), list) and spec["enum"]:
        return spec["enum"][0]
    kind = spec.get("type", "string")
    if kind in ("integer", "number"):
        bound = spec.get("minimum", spec.get("exclusiveMinimum", 0))
        low = int(bound) if isinstance(bound, (int, float)) else 0
        return max(1, low + 1 if "exclusiveMinimum" in spec else low)
    if kind == "boolean":
        return False
    if kind == "array":
        return []
    if kind == "object":
        return {}
    pattern = spec.get("pattern")
    if isinstance(pattern, str):
        return example_in(error_text, pattern) or sample_for_pattern(pattern)
    if "email" in name.lower() or spec.get("format") == "email" or name == "to":
        return "customer@example.com"
    return "example"


def example_in(message: str, pattern: str) -> str | None:
    """A word of ``message`` that matches ``pattern`` (e.g. the "A-1042" in "look like A-1042")."""
    core = pattern.removeprefix("^").removesuffix("$")
    for found in re.findall(r"[\w@.+-]+", message):
        word = str(found).rstrip(".")
        if re.fullmatch(core, word):
            return word
    return None


_DIGITS = "1042" * 8
_TOKEN = re.compile(r"\\.|\[[^\]]+\]|.")
_COUNT = re.compile(r"\{(\d+)(?:,\d*)?\}|[+?*]")


def sample_for_pattern(pattern: str) -> str | None:
    """A string matching a simple regex (literals, \\d, \\w, [classes], {n}, +, ?, *), or None."""
    core = pattern.removeprefix("^").removesuffix("$")
    out: list[str] = []
    position = 0
    digits = 0
    while position < len(core):
        token = _TOKEN.match(core, position)
        if token is None:  # pragma: no cover - the token pattern matches any character
            return None
        position = token.end()
        count_match = _COUNT.match(core, position)
        count = 1
        if count_match:
            position = count_match.end()
            count = (
                int(count_match.group(1))
                if count_match.group(1)
                else (0 if count_match.group(0) in "?*" else 1)
            )
        for _ in range(count):
            piece = _one(token.group(0), digits)
            if piece is None:
                return None
            digits += piece.isdigit()
            out.append(piece)
    candidate = "".join(out)
    return candidate if re.fullmatch(core, candidate) else None


def _one(piece: str, digits: int) -> str | None:
    if piece == r"\d":
        return _DIGITS[digits % len(_DIGITS)]
    if piece == r"\w":
        return "a"
    if piece.startswith("[") and len(piece) > 2:
        first = piece[1:-1].lstrip("^")
        return first[0] if first and piece[1] != "^" else None
    if piece.startswith("\\"):
        return piece[1:]
    if piece == ".":
        return "x"
    if piece in "()|":
        return None
    return piece
