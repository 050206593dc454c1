"""A tool's answer as untrusted content: text parts and structured content, cut to a size limit.

Everything in a result is the server's: Lockgate shows it to the model as content inside a tool
result, never as instructions, and never acts on it. Parts that are not text (images, audio,
binary resources) are named, not passed on. A result over the limit is cut, and its note says so.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from lockgate.mcp.untrusted import one_line

SHOWN = 200  # characters of a server-supplied name, type or URI inside a placeholder


@dataclass(frozen=True)
class ToolResult:
    """What an MCP tool answered, as JSON-able data, marked untrusted (see ``to_json``)."""

    server: str
    tool: str
    parts: tuple[Mapping[str, Any], ...]
    """``{"type": "text", "text": ...}`` each (a non-text part becomes a text naming it)."""
    structured: Mapping[str, Any] | None
    """The result's ``structuredContent``, when it had one and it fitted."""
    is_error: bool
    cut: bool = False
    """True when the result was larger than the limit: ``note`` says what was left out."""
    note: str | None = None

    untrusted: ClassVar[bool] = True  # every MCP result taints the run that reads it

    def to_json(self) -> dict[str, Any]:
        """The result for the model: labelled as untrusted content from this server's tool."""
        out: dict[str, Any] = {
            "untrusted": True,
            "source": f"mcp:{self.server}/{self.tool}",
            "content": [dict(part) for part in self.parts],
        }
        if self.structured is not None:
            out["structuredContent"] = dict(self.structured)
        if self.is_error:
            out["isError"] = True
        if self.note:
            out["note"] = self.note
        return out

    def text(self) -> str:
        """The text parts joined, for a short error message or a log line (still untrusted)."""
        return "\n".join(str(part.get("text", "")) for part in self.parts)


def tool_result(server: str, tool: str, wire: Mapping[str, Any], max_bytes: int) -> ToolResult:
    """A ``tools/call`` result (camelCase JSON) as a ToolResult, cut to ``max_bytes`` with a note."""
    parts = [_part(block) for block in wire.get("content") or () if isinstance(block, Mapping)]
    structured = wire.get("structuredContent")
    structured = dict(structured) if isinstance(structured, Mapping) else None
    kept, fitted, note = _cut(_without_echoes(parts, structured), structured, max_bytes)
    if structured is not None and fitted is None:  # too big to pass on: its text echo, cut, says more
        kept, fitted, note = _cut(parts, structured, max_bytes)
    structured = fitted
    return ToolResult(
        server=server,
        tool=tool,
        parts=tuple(kept),
        structured=structured,
        is_error=bool(wire.get("isError")),
        cut=note is not None,
        note=note,
    )


def _part(block: Mapping[str, Any]) -> dict[str, str]:
    """One content block as a text part; what is not text is named, with its size, not passed on."""
    kind = str(block.get("type", ""))
    if kind == "text":
        return {"type": "text", "text": str(block.get("text", ""))}
    if kind == "resource" and isinstance(block.get("resource"), Mapping):
        resource = block["resource"]
        uri = one_line(str(resource.get("uri", "")), SHOWN)
        if isinstance(resource.get("text"), str):
            return {"type": "text", "text": resource["text"], "uri": uri}
        return _placeholder(f"binary resource {uri}", resource.get("mimeType"), resource.get("blob"))
    if kind == "resource_link":
        return _placeholder(f"link to resource {one_line(str(block.get('uri', '')), SHOWN)}", None, None)
    if kind in ("image", "audio"):
        return _placeholder(kind, block.get("mimeType"), block.get("data"))
    return _placeholder(f"content of type {one_line(kind, 40)}", None, None)


def _without_echoes(parts: list[dict[str, str]], structured: dict[str, Any] | None) -> list[dict[str, str]]:
    """The parts less any text that only repeats the structured content as JSON.

    The MCP spec asks a tool with structured content to send it again as serialised JSON in a
    text block, for older clients; passing both on would show the model the same data twice.
    """
    if structured is None:
        return parts
    return [part for part in parts if "uri" in part or _json_or_none(part["text"]) != structured]


def _json_or_none(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _placeholder(what: str, mime: Any, data: Any) -> dict[str, str]:
    details = [one_line(mime, 80)] if isinstance(mime, str) else []
    if isinstance(data, str):
        details.append(f"{len(data) * 3 // 4} bytes")
    extra = f" ({', '.join(details)})" if details else ""
    return {"type": "text", "text": f"[{what}{extra}: not shown]"}


def _size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass"))


def _cut(
    parts: Sequence[dict[str, str]], structured: dict[str, Any] | None, max_bytes: int
) -> tuple[list[dict[str, str]], dict[str, Any] | None, str | None]:
    """Text parts in order while they fit (the last one cut), then structured content if it fits."""
    total = sum(_size(part) for part in parts) + (_size(structured) if structured is not None else 0)
    if total <= max_bytes:
        return list(parts), structured, None
    budget, kept, dropped = max_bytes, [], 0
    for part in parts:
        size = _size(part)
        if size <= budget:
            kept.append(part)
            budget -= size
        elif budget > 64:  # room for a useful piece of this part: cut its text to the room left
            kept.append(_shrink(part, budget))
            budget = 0
        else:
            dropped += 1
    if structured is not None and _size(structured) > budget:
        structured, dropped = None, dropped + 1
    note = f"The result was {total} bytes, over the {max_bytes} allowed: it was cut"
    note += f" ({dropped} part{'s' if dropped != 1 else ''} left out)." if dropped else "."
    return kept, structured, note


def _shrink(part: dict[str, str], budget: int) -> dict[str, str]:
    """The part with its text cut so that the part's JSON takes at most ``budget`` bytes."""
    raw = part["text"].encode("utf-8", "surrogatepass")
    keep = len(raw)
    while True:
        piece = {**part, "text": raw[:keep].decode("utf-8", "ignore")}
        over = _size(piece) - budget
        if over <= 0 or keep == 0:
            return piece
        keep = max(keep - over, 0)
