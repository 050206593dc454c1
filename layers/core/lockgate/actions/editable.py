"""Which of a tool's arguments a reviewer may change before approving (``Tool.editable``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_PRIMITIVE = {"string", "number", "integer", "boolean"}


def editable_fields(schema: Mapping[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    """``{field: JSON schema}`` for the tool's editable fields; ValueError names one that cannot be edited.

    A pydantic ``Decimal`` (a number, or a string of digits) is edited as the number it is.
    """
    properties = schema.get("properties", {})
    kept: dict[str, Any] = {}
    for name in names:
        field = properties.get(name)
        if not isinstance(field, dict):
            raise ValueError(f"editable field {name!r} is not one of its arguments")
        primitive = _primitive(field)
        if primitive is None:
            raise ValueError(f"editable field {name!r} is not a string, number, integer or boolean")
        kept[name] = primitive
    return kept


def _primitive(field: Mapping[str, Any]) -> dict[str, Any] | None:
    """The field's schema as one primitive type, or None (a list, an object, a union of others)."""
    if field.get("type") in _PRIMITIVE:
        return dict(field)
    options = field.get("anyOf")
    if not isinstance(options, list):
        return None
    numbers = [o for o in options if isinstance(o, dict) and o.get("type") == "number"]
    strings = [o for o in options if isinstance(o, dict) and o.get("type") == "string"]
    if len(numbers) != 1 or len(numbers) + len(strings) != len(options):
        return None
    described = {k: v for k, v in field.items() if k in ("title", "description")}
    return {**described, **numbers[0]}
