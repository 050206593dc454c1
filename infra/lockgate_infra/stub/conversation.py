"""Reading a Messages API request the way a scripted model needs: offered tools, calls made, results."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

JSON = dict[str, Any]


def canonical(value: object) -> str:
    """Deterministic JSON: sorted keys, no spaces."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def messages(request: JSON) -> list[JSON]:
    """The request's messages (only well-formed ones)."""
    raw = request.get("messages")
    return [m for m in raw if isinstance(m, dict)] if isinstance(raw, list) else []


def blocks(message: JSON) -> list[JSON]:
    """A message's content as blocks; string content is one text block."""
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def offered_tools(request: JSON) -> dict[str, JSON]:
    """Tool definitions by name, in the order offered."""
    raw = request.get("tools")
    tools = [t for t in raw if isinstance(t, dict)] if isinstance(raw, list) else []
    return {str(t["name"]): t for t in tools if isinstance(t.get("name"), str)}


def properties(tool: JSON) -> dict[str, JSON]:
    """The tool's input_schema properties."""
    schema = tool.get("input_schema")
    props = schema.get("properties") if isinstance(schema, dict) else None
    return {str(k): v for k, v in props.items() if isinstance(v, dict)} if isinstance(props, dict) else {}


def required(tool: JSON) -> list[str]:
    """The tool's required argument names."""
    schema = tool.get("input_schema")
    names = schema.get("required") if isinstance(schema, dict) else None
    return [str(n) for n in names] if isinstance(names, list) else []


def argument(tool: JSON | None, wanted: str, *hints: str) -> str:
    """The schema's name for an argument: exact match, else one containing a hint, else ``wanted``."""
    props = properties(tool) if tool else {}
    if wanted in props:
        return wanted
    for hint in hints:
        for name in props:
            if hint in name.lower():
                return name
    return wanted


def result_text(block: JSON) -> str:
    """A tool_result's content as text (string content, or its text blocks joined)."""
    content = block.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text"
        )
    return ""


def parse_json(text: str) -> Any:
    """JSON if the text is JSON, else None."""
    try:
        return json.loads(text)
    except ValueError:
        return None


@dataclass(frozen=True)
class ToolCall:
    """A tool call the model made in the conversation, with its result once one came back."""

    id: str
    """The tool_use block's id."""

    name: str
    """The tool called."""

    input: JSON
    """The arguments it was called with."""

    result: str | None = None
    """The tool_result's text, as the model received it (a value as sorted-key JSON, an error's
    text); None while no result came back."""

    is_error: bool = False
    """Whether the result is an error (a ToolError, a refusal, a call that waits for a person)."""

    @property
    def ok(self) -> bool:
        """Answered without error."""
        return self.result is not None and not self.is_error

    def data(self) -> Any:
        """The result parsed as JSON (None if absent or not JSON)."""
        return parse_json(self.result) if self.result is not None else None


def calls(request: JSON) -> list[ToolCall]:
    """Every tool call in the conversation, in order, with results from the following user message."""
    found: list[ToolCall] = []
    turns = messages(request)
    for index, message in enumerate(turns):
        if message.get("role") != "assistant":
            continue
        answers: dict[str, JSON] = {}
        if index + 1 < len(turns) and turns[index + 1].get("role") == "user":
            answers = {
                str(b.get("tool_use_id")): b
                for b in blocks(turns[index + 1])
                if b.get("type") == "tool_result"
            }
        for block in blocks(message):
            if block.get("type") != "tool_use":
                continue
            ident = str(block.get("id"))
            tool_input = block.get("input")
            answer = answers.get(ident)
            found.append(
                ToolCall(
                    id=ident,
                    name=str(block.get("name")),
                    input=tool_input if isinstance(tool_input, dict) else {},
                    result=result_text(answer) if answer is not None else None,
                    is_error=bool(answer.get("is_error")) if answer is not None else False,
                )
            )
    return found


def find_call(request: JSON, name: str, tool_input: JSON) -> ToolCall | None:
    """The call with exactly this name and input, if the conversation has one."""
    key = canonical(tool_input)
    for call in calls(request):
        if call.name == name and canonical(call.input) == key:
            return call
    return None


def user_texts(request: JSON) -> list[str]:
    """Text blocks of user messages (not tool results), in order."""
    return [
        str(b.get("text", ""))
        for m in messages(request)
        if m.get("role") == "user"
        for b in blocks(m)
        if b.get("type") == "text"
    ]


def first_user_text(request: JSON) -> str:
    """The first user message's text."""
    for message in messages(request):
        if message.get("role") == "user":
            return "\n".join(str(b.get("text", "")) for b in blocks(message) if b.get("type") == "text")
    return ""


def tool_use(request: JSON, index: int, name: str, tool_input: JSON) -> JSON:
    """A tool_use block whose id is derived from the conversation: deterministic, unique per turn."""
    digest = hashlib.sha256(f"{canonical(messages(request))}#{index}".encode()).hexdigest()
    return {"type": "tool_use", "id": f"toolu_stub_{digest[:24]}", "name": name, "input": tool_input}


def text(value: str) -> JSON:
    """A text block."""
    return {"type": "text", "text": value}
