"""Phrases for what changed between a pinned and a live tool definition, for an error a person reads.

"property amount added", "property amount type integer → string", "destructiveHint false → true".
Names and values come from the server: each is shown clipped, on one line, and never interpreted.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from lockgate.mcp.untrusted import one_line

HINTS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")
SHOWN_NAME = 64
SHOWN_VALUE = 40
# Keys of a property's schema with a phrase of their own; any other key is "<key> changed".
_DESCRIBED = ("type", "description", "enum", "default", "properties", "required", "items")


def shown(name: str, limit: int = SHOWN_NAME) -> str:
    """A server-supplied name or value as it appears in a phrase: printable, one line, clipped."""
    return one_line(name, limit)


def value_text(value: Any) -> str:
    """A JSON value in a phrase: ``unset`` for absent, else compact JSON, clipped."""
    if value is _UNSET:
        return "unset"
    return shown(json.dumps(value, sort_keys=True, ensure_ascii=False), SHOWN_VALUE)


_UNSET: Any = object()


def schema_changes(pinned: Mapping[str, Any], live: Mapping[str, Any], path: str = "") -> list[str]:
    """Differences between two object schemas: properties added, removed, changed; required; the rest."""
    found: list[str] = []
    before, after = _properties(pinned), _properties(live)
    found += [f"property {path}{shown(name)} added" for name in sorted(after.keys() - before.keys())]
    found += [f"property {path}{shown(name)} removed" for name in sorted(before.keys() - after.keys())]
    for name in sorted(before.keys() & after.keys()):
        if before[name] != after[name]:
            found += _property_changes(f"{path}{shown(name)}", before[name], after[name])
    was, now = _required(pinned), _required(live)
    found += [f"property {path}{shown(name)} now required" for name in sorted(now - was)]
    found += [f"property {path}{shown(name)} no longer required" for name in sorted(was - now)]
    for key in sorted((pinned.keys() | live.keys()) - {"properties", "required"}):
        if pinned.get(key, _UNSET) != live.get(key, _UNSET):
            found.append(f"{path}{shown(key)} changed" if path else f"{shown(key)} changed")
    return found


def _property_changes(where: str, before: Any, after: Any) -> list[str]:
    if not isinstance(before, Mapping) or not isinstance(after, Mapping):
        return [f"property {where} changed"]
    found: list[str] = []
    for key, phrase in (("type", "type"), ("default", "default"), ("enum", "allowed values")):
        old, new = before.get(key, _UNSET), after.get(key, _UNSET)
        if old != new:
            found.append(f"property {where} {phrase} {value_text(old)} → {value_text(new)}")
    if before.get("description") != after.get("description"):
        found.append(f"property {where} description changed")
    if "properties" in before or "properties" in after:
        found += schema_changes(_object_part(before), _object_part(after), f"{where}.")
    if before.get("items", _UNSET) != after.get("items", _UNSET):
        found.append(f"property {where} items changed")
    for key in sorted((before.keys() | after.keys()) - set(_DESCRIBED)):
        if before.get(key, _UNSET) != after.get(key, _UNSET):
            found.append(f"property {where} {shown(key)} changed")
    return found or [f"property {where} changed"]


def _object_part(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The nested object's own properties and required list (its other keys are the parent's phrases)."""
    return {key: schema[key] for key in ("properties", "required") if key in schema}


def _properties(schema: Mapping[str, Any]) -> dict[str, Any]:
    found = schema.get("properties")
    return dict(found) if isinstance(found, Mapping) else {}


def _required(schema: Mapping[str, Any]) -> set[str]:
    found = schema.get("required")
    return {name for name in found if isinstance(name, str)} if isinstance(found, list) else set()


def annotation_changes(pinned: Mapping[str, Any], live: Mapping[str, Any]) -> list[str]:
    """Each hint whose value changed (``unset`` when absent), and the annotations' title."""
    found = [
        f"{hint} {_hint(pinned.get(hint))} → {_hint(live.get(hint))}"
        for hint in HINTS
        if pinned.get(hint) != live.get(hint)
    ]
    if pinned.get("title") != live.get("title"):
        found.append("title changed")
    return found


def _hint(value: Any) -> str:
    return "unset" if value is None else str(value).lower()


def meta_changes(pinned: Mapping[str, Any], live: Mapping[str, Any]) -> list[str]:
    """Keys of ``_meta`` added, removed or changed."""
    found = [f"key {shown(key)} added" for key in sorted(live.keys() - pinned.keys())]
    found += [f"key {shown(key)} removed" for key in sorted(pinned.keys() - live.keys())]
    found += [
        f"key {shown(key)} changed" for key in sorted(pinned.keys() & live.keys()) if pinned[key] != live[key]
    ]
    return found
