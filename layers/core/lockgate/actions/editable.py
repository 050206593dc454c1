"""Which of a tool's arguments a reviewer may change before approving (``Tool.editable``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_PRIMITIVE = {"string", "number", "integer", "boolean"}


def editable_fields(schema: Mapping[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    """``{field: JSON schema}`` for the tool's editable fields; ValueError names one that cannot be edited."""
    properties = schema.get("properties", {})
    kept: dict[str, Any] = {}
    for name in names:
        field = properties.get(name)
        if not isinstance(field, dict):
            raise ValueError(f"editable field {name!r} is not one of its arguments")
        if field.get("type") not in _PRIMITIVE:
            raise ValueError(f"editable field {name!r} is not a string, number, integer or boolean")
        kept[name] = dict(field)
    return kept
