"""Request checks the Messages API makes, with messages worded like the API's (400 invalid_request_error).

These are how tests prove an agent loop follows the API's rules: roles alternate starting with
user; every assistant ``tool_use`` is answered by a ``tool_result`` with the same id at the start
of the next user message; no ``tool_result`` without its ``tool_use`` in the previous message.
"""

from __future__ import annotations

import json
import re
from typing import Any

from lockgate.model.json_outputs import supports_json_outputs
from lockgate_infra.stub.conversation import JSON, blocks

TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
MAX_CACHE_BREAKPOINTS = 4


def request_problem(body: Any, *, count_tokens: bool = False) -> str | None:
    """What the API would reject in this request body, or None if it is acceptable."""
    if not isinstance(body, dict):
        return "The request body is not a JSON object."
    if body.get("stream") is True:
        return "stream: streaming is not supported by the Lockgate stub server; call without stream=True."
    required = ("model", "messages") if count_tokens else ("model", "max_tokens", "messages")
    for name in required:
        if name not in body:
            return f"{name}: Field required"
    return (
        _scalars(body, count_tokens)
        or _system(body.get("system"))
        or _tools(body.get("tools"))
        or _messages(body["messages"])
        or _cache_markers(body)
        or _output_config(body)
    )


def _scalars(body: JSON, count_tokens: bool) -> str | None:
    if not isinstance(body["model"], str) or not body["model"]:
        return "model: Input should be a valid string"
    if count_tokens:
        return None
    max_tokens = body["max_tokens"]
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool):
        return "max_tokens: Input should be a valid integer"
    if max_tokens < 1:
        return "max_tokens: Input should be greater than or equal to 1"
    return None


def _output_config(body: JSON) -> str | None:
    """Structured outputs: ``output_config.format`` is a json_schema, for a model that supports it."""
    config = body.get("output_config")
    if config is None:
        return None
    if not isinstance(config, dict):
        return "output_config: Input should be a valid dictionary"
    fmt = config.get("format")
    if fmt is None:
        return None
    if not isinstance(fmt, dict) or fmt.get("type") != "json_schema":
        return "output_config.format.type: Input should be 'json_schema'"
    schema = fmt.get("schema")
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return "output_config.format.schema: a JSON schema of type object is required"
    if not supports_json_outputs(str(body["model"])):
        return f"output_config.format: structured outputs are not supported for model {body['model']}"
    return None


def constrained_reply_ok(body: JSON, reply: Any) -> bool:
    """Under structured outputs a finished reply is one JSON value (the API decodes it so)."""
    if "output_config" not in body or reply.stop_reason != "end_turn":
        return True
    text = "".join(str(b.get("text", "")) for b in reply.content if b.get("type") == "text")
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _system(system: Any) -> str | None:
    if system is None or isinstance(system, str):
        return None
    if not isinstance(system, list):
        return "system: Input should be a valid string or a list of text blocks"
    for index, block in enumerate(system):
        if (
            not isinstance(block, dict)
            or block.get("type") != "text"
            or not isinstance(block.get("text"), str)
        ):
            return f"system.{index}: Input should be a text block"
        if not block["text"]:
            return "system: text content blocks must be non-empty"
    return None


def _tools(tools: Any) -> str | None:
    if tools is None:
        return None
    if not isinstance(tools, list):
        return "tools: Input should be a valid list"
    seen: set[str] = set()
    for index, tool in enumerate(tools):
        if not isinstance(tool, dict):
            return f"tools.{index}: Input should be a valid dictionary"
        name = tool.get("name")
        if not isinstance(name, str) or not TOOL_NAME.match(name):
            return f"tools.{index}.custom.name: String should match pattern '{TOOL_NAME.pattern}'"
        if not isinstance(tool.get("input_schema"), dict):
            return f"tools.{index}.custom.input_schema: Field required"
        if name in seen:
            return "tools: Tool names must be unique."
        seen.add(name)
    return None


def _messages(turns: Any) -> str | None:
    if not isinstance(turns, list):
        return "messages: Input should be a valid list"
    if not turns:
        return "messages: at least one message is required"
    for index, message in enumerate(turns):
        problem = _message_shape(index, message, last=index == len(turns) - 1)
        if problem:
            return problem
    if turns[0]["role"] != "user":
        return 'messages: first message must use the "user" role'
    for index in range(1, len(turns)):
        role = turns[index]["role"]
        if role == turns[index - 1]["role"]:
            return (
                'messages: roles must alternate between "user" and "assistant", '
                f'but found multiple "{role}" roles in a row'
            )
    return _tool_pairs(turns)


def _message_shape(index: int, message: Any, *, last: bool) -> str | None:
    if not isinstance(message, dict):
        return f"messages.{index}: Input should be a valid dictionary"
    role = message.get("role")
    if role not in ("user", "assistant"):
        return f"messages.{index}.role: Input should be 'user' or 'assistant'"
    content = message.get("content")
    if not isinstance(content, (str, list)):
        return f"messages.{index}.content: Input should be a valid string or list of content blocks"
    if not content and not (last and role == "assistant"):
        return (
            f"messages.{index}: all messages must have non-empty content "
            "except for the optional final assistant message"
        )
    for position, block in enumerate(content if isinstance(content, list) else []):
        problem = _block_shape(f"messages.{index}.content.{position}", role, block)
        if problem:
            return problem
    if isinstance(content, str) and not content.strip() and not last:
        return "messages: text content blocks must contain non-whitespace text"
    return None


def _block_shape(where: str, role: str, block: Any) -> str | None:
    if not isinstance(block, dict) or not isinstance(block.get("type"), str):
        return f"{where}: Input should be a valid content block with a type"
    kind = block["type"]
    if kind == "text" and (not isinstance(block.get("text"), str) or not block["text"]):
        return "messages: text content blocks must be non-empty"
    if kind == "tool_use":
        if role != "assistant":
            return f"{where}: `tool_use` blocks can only be in `assistant` messages"
        if not isinstance(block.get("id"), str) or not isinstance(block.get("name"), str):
            return f"{where}.id: Field required"
        if not isinstance(block.get("input"), dict):
            return f"{where}.input: Input should be a valid dictionary"
    if kind == "tool_result":
        if role != "user":
            return f"{where}: `tool_result` blocks can only be in `user` messages"
        if not isinstance(block.get("tool_use_id"), str):
            return f"{where}.tool_use_id: Field required"
    return None


def _tool_pairs(turns: list[JSON]) -> str | None:
    seen_ids: set[str] = set()
    for index, message in enumerate(turns):
        content = blocks(message)
        if message["role"] == "assistant":
            for position, block in enumerate(content):
                if block.get("type") == "tool_use":
                    if block["id"] in seen_ids:
                        return f"messages.{index}.content.{position}: `tool_use` ids must be unique"
                    seen_ids.add(block["id"])
            continue
        previous = blocks(turns[index - 1]) if index > 0 else []
        offered = {b["id"] for b in previous if b.get("type") == "tool_use"}
        problem = _answers(index, offered, content)
        if problem:
            return problem
    last = turns[-1]
    if last["role"] == "assistant":
        pending = [b["id"] for b in blocks(last) if b.get("type") == "tool_use"]
        if pending:
            return _unanswered(len(turns) - 1, pending)
    return None


def _answers(index: int, offered: set[str], content: list[JSON]) -> str | None:
    """The user message at ``index`` answers the previous assistant's tool_use ids, results first."""
    leading: list[str] = []
    for block in content:
        if block.get("type") != "tool_result":
            break
        leading.append(block["tool_use_id"])
    missing = [ident for ident in sorted(offered) if ident not in leading]
    if missing:
        return _unanswered(index - 1, missing)
    for position, block in enumerate(content):
        if block.get("type") == "tool_result" and block["tool_use_id"] not in offered:
            return (
                f"messages.{index}.content.{position}: unexpected `tool_use_id` found in "
                f"`tool_result` blocks: {block['tool_use_id']}. Each `tool_result` block must have "
                "a corresponding `tool_use` block in the previous message."
            )
    return None


def _unanswered(index: int, ids: list[str]) -> str:
    return (
        f"messages.{index}: `tool_use` ids were found without `tool_result` blocks immediately after: "
        f"{', '.join(ids)}. Each `tool_use` block must have a corresponding `tool_result` block "
        "in the next message."
    )


def _cache_markers(body: JSON) -> str | None:
    marked: list[Any] = []
    for key in ("tools", "system"):
        value = body.get(key)
        marked += (
            [b for b in value if isinstance(b, dict) and "cache_control" in b]
            if isinstance(value, list)
            else []
        )
    for message in body["messages"]:
        marked += [b for b in blocks(message) if "cache_control" in b]
    for block in marked:
        control = block["cache_control"]
        if not isinstance(control, dict) or control.get("type") != "ephemeral":
            return "cache_control: Input tag does not match the expected tag 'ephemeral'"
        if control.get("ttl", "5m") not in ("5m", "1h"):
            return "cache_control.ttl: Input should be '5m' or '1h'"
    ttls = [block["cache_control"].get("ttl", "5m") for block in marked]
    if "5m" in ttls and "1h" in ttls[ttls.index("5m") :]:
        # The API's rule: longer-lived entries first (tools, system, messages order).
        return "cache_control: a ttl='1h' cache_control block must not come after a ttl='5m' one"
    if len(marked) > MAX_CACHE_BREAKPOINTS:
        return (
            f"A maximum of {MAX_CACHE_BREAKPOINTS} blocks with cache_control may be provided. "
            f"Found {len(marked)}."
        )
    return None
