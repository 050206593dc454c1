"""ModelRequest.to_params: canonical messages (same content, same bytes) and where breakpoints go."""

from __future__ import annotations

import json
from typing import Any

from lockgate.model.breakpoints import LOOKBACK_BLOCKS, MAX_BREAKPOINTS
from lockgate.model.client import ModelRequest

TOOL = {"name": "lookup", "description": "Look up.", "input_schema": {"type": "object", "properties": {}}}


def request(messages: list[dict[str, Any]], **overrides: Any) -> ModelRequest:
    fields: dict[str, Any] = {
        "model": "claude-sonnet-5-5",
        "system": "Be brief.",
        "tools": [TOOL],
        "messages": messages,
        "max_tokens": 100,
        "conversation": True,
    }
    return ModelRequest(**{**fields, **overrides})


def sent(params: dict[str, Any]) -> str:
    return json.dumps(params, ensure_ascii=False)  # as the SDK sends it: insertion order kept


def count_markers(params: dict[str, Any]) -> int:
    blocks = [*params.get("tools", []), *params["system"]]
    blocks += [b for m in params["messages"] for b in m["content"]]
    return sum("cache_control" in b for b in blocks)


def test_the_same_content_in_another_key_order_or_as_a_string_is_sent_as_the_same_bytes() -> None:
    use = {"type": "tool_use", "id": "t1", "name": "lookup", "input": {"a": 1, "b": {"y": 2, "x": 3}}}
    reordered = {"input": {"b": {"x": 3, "y": 2}, "a": 1}, "name": "lookup", "id": "t1", "type": "tool_use"}
    result = {"type": "tool_result", "tool_use_id": "t1", "content": "{}"}
    one = [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": [use]},
        {"role": "user", "content": [result]},
    ]
    other = [
        {"content": [{"text": "Hi", "type": "text"}], "role": "user"},
        {"role": "assistant", "content": [reordered]},
        {"role": "user", "content": [{"content": "{}", "tool_use_id": "t1", "type": "tool_result"}]},
    ]  # fmt: skip
    assert sent(request(one).to_params()) == sent(request(other).to_params())


def test_markers_a_caller_left_in_messages_or_tools_are_replaced_by_the_placed_ones() -> None:
    stale = {"type": "text", "text": "old", "cache_control": {"type": "ephemeral", "ttl": "1h"}}
    messages = [
        {"role": "user", "content": [stale]},
        {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
        {"role": "user", "content": [{"type": "text", "text": "new"}]},
    ]
    params = request(messages, tools=[{**TOOL, "cache_control": {"type": "ephemeral"}}]).to_params()
    assert "cache_control" not in params["tools"][0]
    assert "cache_control" not in params["messages"][0]["content"][0]
    assert params["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert count_markers(params) == 2


def test_a_one_shot_request_marks_only_the_system_prompt() -> None:
    params = request([{"role": "user", "content": "Hi"}], conversation=False, cache_ttl="1h").to_params()
    assert params["system"][0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert count_markers(params) == 1


def test_the_rolling_breakpoint_skips_thinking_blocks_it_cannot_mark() -> None:
    thinking = {"type": "thinking", "thinking": "b", "signature": "s"}
    paused = {"role": "assistant", "content": [{"type": "text", "text": "a"}, thinking]}
    params = request([{"role": "user", "content": "Hi"}, paused]).to_params()
    assert [("cache_control" in b) for b in params["messages"][-1]["content"]] == [True, False]


def test_never_more_than_four_breakpoints_however_long_the_step() -> None:
    calls = [
        {"type": "tool_use", "id": f"t{n}", "name": "lookup", "input": {}} for n in range(3 * LOOKBACK_BLOCKS)
    ]
    results = [{"type": "tool_result", "tool_use_id": c["id"], "content": "{}"} for c in calls]
    messages = [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": calls},
        {"role": "user", "content": results},
    ]
    params = request(messages).to_params()
    assert count_markers(params) == 3 <= MAX_BREAKPOINTS
