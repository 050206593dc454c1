"""An MCP tool's arguments as a pydantic model, from its pinned input schema.

The model is offered the pinned schema exactly (less the argument Lockgate fills with the ledger's
key, when the server takes it as one); a call's arguments are validated against it with
``jsonschema`` (which the ``mcp`` SDK brings), and a failure is a short field-level message the model
can act on, like any tool's. The canonical arguments are the JSON the model sent, as validated.
What a reviewer reads (``summary_of``), the target and the business identity are built from them.
"""

from __future__ import annotations

import copy
import string
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, model_validator

from lockgate.actions.tools import canonical_json
from lockgate.errors import ConfigError
from lockgate.mcp.untrusted import one_line

MAX_ERRORS = 5
SHOWN_VALUE = 80  # characters of one argument inside a summary


class McpArgs(BaseModel):
    """Base of every MCP tool's argument model: its fields are the schema's, kept as sent."""

    model_config = ConfigDict(extra="allow", frozen=True)
    offered_schema: ClassVar[dict[str, Any]] = {"type": "object"}

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """The pinned input schema, as the model is offered it."""
        return copy.deepcopy(cls.offered_schema)

    @model_validator(mode="before")
    @classmethod
    def _against_schema(cls, value: Any) -> Any:
        if not isinstance(value, dict):
            raise ValueError("the arguments are a JSON object")
        problems = schema_problems(cls.offered_schema, value)
        if problems:
            raise ValueError("; ".join(problems))
        return value


def args_model(exposed: str, schema: Mapping[str, Any], hidden: str = "") -> type[McpArgs]:
    """The argument model of the tool the model calls ``exposed``; ``hidden``: an argument it never sees."""
    offered = copy.deepcopy(dict(schema))
    if hidden:
        offered.get("properties", {}).pop(hidden, None)
        if isinstance(offered.get("required"), list):
            offered["required"] = [name for name in offered["required"] if name != hidden]
    offered.setdefault("type", "object")
    return type(f"{exposed}_args", (McpArgs,), {"offered_schema": offered, "__module__": __name__})


def schema_problems(schema: Mapping[str, Any], value: Any) -> list[str]:
    """What is wrong with ``value`` for ``schema``, one short line each (at most five)."""
    from jsonschema import Draft202012Validator  # with the mcp SDK: loaded only where MCP is used

    validator = Draft202012Validator(dict(schema))
    found = []
    for error in sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))[:MAX_ERRORS]:
        where = ".".join(str(p) for p in error.absolute_path)
        found.append(f"{where}: {error.message[:200]}" if where else error.message[:200])
    return found


def summary_of(
    tool: str, server: str, template: str, fields: set[str], where: str
) -> Callable[[McpArgs], str]:
    """The one line a reviewer reads, from the config's template (``{argument}`` fields only), or the
    call's name and arguments; each value is clipped to one line."""
    if not template:
        return lambda args: one_line(
            f"{tool} on {server}: {canonical_json(args.model_dump(mode='json'))}", 300
        )
    parsed = list(string.Formatter().parse(template))
    for _, field_name, spec, conversion in parsed:
        if field_name is not None and (field_name not in fields or spec or conversion):
            raise ConfigError(
                f"{where}.summary: {{{field_name}}} is not an argument of the pinned tool "
                "(write {argument}, with no format or attribute)"
            )

    def summary(args: McpArgs) -> str:
        values = args.model_dump(mode="json")
        parts = []
        for literal, field_name, _, _ in parsed:
            parts.append(literal)
            if field_name is not None:
                parts.append(one_line(_text(values.get(field_name)), SHOWN_VALUE))
        return one_line("".join(parts), 300)

    return summary


def _text(value: Any) -> str:
    if value is None:
        return "-"
    return value if isinstance(value, str) else canonical_json(value)


def value_of(argument: str) -> Callable[[McpArgs], str]:
    return lambda args: _text(args.model_dump(mode="json").get(argument))


def joined(exposed: str, arguments: Sequence[str]) -> Callable[[McpArgs], str]:
    def identity(args: McpArgs) -> str:
        values = args.model_dump(mode="json")
        return f"{exposed}#" + canonical_json([values.get(a) for a in arguments])

    return identity
