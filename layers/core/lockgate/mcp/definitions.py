"""A tool's definition as an MCP server lists it, in the one canonical form that is pinned and compared.

Everything in a definition is the server's text: untrusted, never interpreted. Long titles and
descriptions are clipped, and the clip ends with a digest of what was cut, so a change past the
clip still changes the definition and its fingerprint. A definition Lockgate cannot hold safely (a
name outside the spec's characters, a schema that is not an object, over the size or depth
limits, a hint that is not a boolean) is rejected, with the reason, instead of being trimmed.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lockgate.mcp.changes import HINTS, annotation_changes, meta_changes, schema_changes
from lockgate.mcp.untrusted import clip

NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}")  # the spec's tool-name characters (2025-11-25)
MAX_TITLE = 200
MAX_DESCRIPTION = 8_000
MAX_DEFINITION_BYTES = 65_536  # the canonical JSON of one definition, schemas included
MAX_DEPTH = 32  # nesting of schemas and _meta
MAX_CHANGES = 20


class DefinitionRejected(ValueError):
    """A server's tool definition that cannot be pinned or offered; the message says why."""


def canonical_json(value: Any) -> str:
    """Deterministic JSON: sorted keys, no spaces, UTF-8 text as is, no NaN or infinity."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


@dataclass(frozen=True)
class ToolDefinition:
    """One tool as listed: what the model is offered once pinned, and what drift is measured on."""

    name: str
    title: str | None
    description: str | None
    input_schema: Mapping[str, Any]
    output_schema: Mapping[str, Any] | None
    annotations: Mapping[str, Any]
    """``title`` and the four hints that were set; only hints, never policy (the config decides risk)."""
    meta: Mapping[str, Any] | None

    @classmethod
    def from_wire(cls, tool: Mapping[str, Any]) -> ToolDefinition:
        """The definition from a ``tools/list`` entry (camelCase keys); DefinitionRejected if unusable."""
        name = tool.get("name")
        if not isinstance(name, str) or not NAME.fullmatch(name):
            raise DefinitionRejected("the tool's name is not 1-128 letters, digits, '_', '-' or '.'")
        definition = cls(
            name=name,
            title=_text(tool, "title", MAX_TITLE),
            description=_text(tool, "description", MAX_DESCRIPTION),
            input_schema=_schema(tool.get("inputSchema"), "input schema", required=True) or {},
            output_schema=_schema(tool.get("outputSchema"), "output schema", required=False),
            annotations=_annotations(tool.get("annotations")),
            meta=_meta(tool.get("_meta")),
        )
        size = len(definition.canonical().encode("utf-8", "surrogatepass"))
        if size > MAX_DEFINITION_BYTES:
            raise DefinitionRejected(
                f"the definition is {size} bytes, over the {MAX_DEFINITION_BYTES} allowed"
            )
        return definition

    def to_wire(self) -> dict[str, Any]:
        """The definition as JSON-able data with the wire's names, unset fields left out."""
        wire: dict[str, Any] = {"name": self.name, "inputSchema": dict(self.input_schema)}
        optional = {
            "title": self.title,
            "description": self.description,
            "outputSchema": self.output_schema,
            "annotations": dict(self.annotations) or None,
            "_meta": self.meta,
        }
        wire.update({key: value for key, value in optional.items() if value is not None})
        return wire

    def canonical(self) -> str:
        """The canonical JSON of ``to_wire()``: what the fingerprint is taken over."""
        return canonical_json(self.to_wire())

    @property
    def fingerprint(self) -> str:
        """``sha256:`` and the hex digest of the canonical JSON."""
        return "sha256:" + hashlib.sha256(self.canonical().encode("utf-8", "surrogatepass")).hexdigest()

    def changes_from(self, pinned: ToolDefinition) -> tuple[str, ...]:
        """What differs in this (live) definition from ``pinned``, one phrase each; empty if equal."""
        found: list[str] = []
        if self.title != pinned.title:
            found.append("title changed")
        if self.description != pinned.description:
            found.append("description changed")
        found += [
            f"input schema changed: {c}" for c in schema_changes(pinned.input_schema, self.input_schema)
        ]
        found += _output_changes(pinned.output_schema, self.output_schema)
        found += [
            f"annotations changed: {c}" for c in annotation_changes(pinned.annotations, self.annotations)
        ]
        found += [f"_meta changed: {c}" for c in meta_changes(pinned.meta or {}, self.meta or {})]
        if not found and self.canonical() != pinned.canonical():
            found.append("definition changed")  # a difference no phrase above names
        if len(found) > MAX_CHANGES:
            found = [*found[: MAX_CHANGES - 1], f"and {len(found) - MAX_CHANGES + 1} more changes"]
        return tuple(found)


@dataclass(frozen=True)
class Listing:
    """What a server listed at one moment: its usable tools by name, and those it listed unusably."""

    server: str
    url: str
    """Where it was read from, without user, password or query."""
    protocol_version: str
    sdk_version: str
    """The ``mcp`` SDK that read it, e.g. ``mcp 2.3.0``."""
    tools: Mapping[str, ToolDefinition]
    rejected: Mapping[str, str]
    """A tool's name (as shown: clipped, one line) → why its definition cannot be used."""


def _output_changes(pinned: Mapping[str, Any] | None, live: Mapping[str, Any] | None) -> list[str]:
    if pinned is None and live is None:
        return []
    if pinned is None:
        return ["output schema added"]
    if live is None:
        return ["output schema removed"]
    return [f"output schema changed: {c}" for c in schema_changes(pinned, live)]


def _text(tool: Mapping[str, Any], key: str, limit: int) -> str | None:
    value = tool.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise DefinitionRejected(f"the tool's {key} is not text")
    return clip(value, limit)


def _schema(value: Any, what: str, *, required: bool) -> dict[str, Any] | None:
    if value is None and not required:
        return None
    if not isinstance(value, dict) or value.get("type") != "object":
        raise DefinitionRejected(f"the {what} is not a JSON schema of type object")
    _check_json(value, what)
    return _copy(value)


def _annotations(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise DefinitionRejected("the annotations are not an object")
    kept: dict[str, Any] = {}
    for hint in HINTS:
        if value.get(hint) is not None:
            if not isinstance(value[hint], bool):
                raise DefinitionRejected(f"the annotation {hint} is not true or false")
            kept[hint] = value[hint]
    if value.get("title") is not None:
        if not isinstance(value["title"], str):
            raise DefinitionRejected("the annotations' title is not text")
        kept["title"] = clip(value["title"], MAX_TITLE)
    return kept


def _meta(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise DefinitionRejected("the tool's _meta is not an object")
    _check_json(value, "_meta")
    return _copy(value)


def _copy(value: dict[str, Any]) -> dict[str, Any]:
    """A deep copy through JSON: the definition shares nothing with the listing it came from."""
    copied: dict[str, Any] = json.loads(canonical_json(value))
    return copied


def _check_json(value: Any, what: str) -> None:
    """Plain JSON data (str keys; no NaN), at most MAX_DEPTH deep: walked without recursion."""
    pending: list[tuple[Any, int]] = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        if depth > MAX_DEPTH:
            raise DefinitionRejected(f"the {what} is nested more than {MAX_DEPTH} levels deep")
        if isinstance(item, dict):
            if not all(isinstance(key, str) for key in item):
                raise DefinitionRejected(f"the {what} has a key that is not text")
            pending.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list):
            pending.extend((child, depth + 1) for child in item)
        elif isinstance(item, float) and not math.isfinite(item):
            raise DefinitionRejected(f"the {what} holds a number JSON cannot carry")
        elif not isinstance(item, str | int | float | bool) and item is not None:
            raise DefinitionRejected(f"the {what} holds a value that is not JSON")
