"""Edited proposals: a reviewer may change the arguments a tool marks editable, as a new version.

A proposal is never changed: an edit is version 1, 2, ... of its arguments, stored beside the
decisions with who made it and what changed, and with its own fingerprint. Approvals count for
one version only. The approval side has no tools, so it checks an edit against what the proposal
recorded when it was made (the editable fields and their JSON schema: type, bounds, length,
pattern, choices); the worker validates the edited call with the tool's own model and hard
policies again before anything runs, so an edit can never do what the agent could not.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal, localcontext
from typing import Any

from lockgate.actions.editable import editable_fields
from lockgate.actions.tools import fingerprint
from lockgate.config.rules import PLAIN_NUMBER, Requirement

__all__ = [
    "EditRefused",
    "EditUnchecked",
    "Version",
    "apply_edit",
    "editable",
    "editable_fields",
    "new_version",
    "version_key",
]
from lockgate.approvals.proposals import Proposal

_LONG_NUMBER = re.compile(r"^-?[0-9]+(\.[0-9]+)?$")
EDITABLE_KEY = "editable"  # proposal.extra: {field: its JSON schema} when the tool allows edits
MAX_EDITED_CHARS = 5_000


class EditRefused(ValueError):
    """An edit that is not allowed or not valid; the message says which field and why."""

    status = 422  # what a page answers: the edit, as sent, cannot be taken


class EditUnchecked(EditRefused):
    """An edit that could not be checked now (the worker did not answer); nothing was recorded."""

    status = 503


@dataclass(frozen=True)
class Version:
    """One edited version of a proposal's arguments (the proposal itself is version 0)."""

    n: int
    args: dict[str, Any]
    fingerprint: str
    editor: str
    at: int
    changes: dict[str, tuple[Any, Any]]  # field -> (before, after), against the version it edited
    summary: str = ""  # the tool's own one line for this version, from the worker's check ("": older)
    requirement: Requirement | None = None  # who must approve this version, by which rule (None: older)
    op_key: str = field(default="", compare=False)  # the ledger key it runs under (worker's check; "": older)

    def to_item(self, approval_id: str, ttl: int) -> dict[str, Any]:
        """The Decisions-table item ``#v<n>`` (low-level)."""
        return {
            "approval_id": {"S": approval_id},
            "reviewer": {"S": version_key(self.n)},
            "kind": {"S": "version"},
            "version": {"N": str(self.n)},
            "args": {"S": json.dumps(self.args, sort_keys=True)},
            "digest": {"S": self.fingerprint},
            "editor": {"S": self.editor},
            "at": {"N": str(self.at)},
            "changes": {"S": json.dumps({k: list(v) for k, v in self.changes.items()}, sort_keys=True)},
            "ttl": {"N": str(ttl)},
            **({"summary": {"S": self.summary[:500]}} if self.summary else {}),
            **({"requirement": {"S": self.requirement.dumps()}} if self.requirement else {}),
            **({"op_key": {"S": self.op_key}} if self.op_key else {}),
        }

    @classmethod
    def from_item(cls, item: Mapping[str, Any]) -> Version:
        """From a low-level item written by ``to_item``."""
        return cls(
            n=int(item["version"]["N"]),
            args=json.loads(item["args"]["S"]),
            fingerprint=item["digest"]["S"],
            editor=item["editor"]["S"],
            at=int(item["at"]["N"]),
            changes={k: (v[0], v[1]) for k, v in json.loads(item["changes"]["S"]).items()},
            summary=item.get("summary", {}).get("S", ""),
            requirement=Requirement.from_json(json.loads(item["requirement"]["S"]))
            if "requirement" in item
            else None,
            op_key=item.get("op_key", {}).get("S", ""),
        )


def version_key(n: int) -> str:
    """The sort key of version ``n``'s item in the Decisions table."""
    return f"#v{n}"


def editable(proposal: Proposal) -> dict[str, Any]:
    """The fields a reviewer may change on this proposal (none: it cannot be edited)."""
    fields = proposal.extra.get(EDITABLE_KEY)
    return fields if isinstance(fields, dict) else {}


def apply_edit(proposal: Proposal, current: Mapping[str, Any], changes: Mapping[str, str]) -> dict[str, Any]:
    """``current`` with ``changes`` (field -> typed text) applied; EditRefused if it is not allowed."""
    allowed = editable(proposal)
    if not allowed:
        raise EditRefused(f"{proposal.tool} cannot be edited: approve or reject it as it is")
    if not changes:
        raise EditRefused("no field was changed")
    edited = dict(current)
    for name, text in changes.items():
        if name not in allowed:
            raise EditRefused(f"{name} cannot be edited (editable: {', '.join(sorted(allowed))})")
        edited[name] = _checked(name, str(text), allowed[name], current.get(name))
    if edited == dict(current):
        raise EditRefused("the edit changes nothing: approve it as it is")
    return edited


def new_version(  # noqa: PLR0913 - a version's parts
    n: int,
    before: Mapping[str, Any],
    after: dict[str, Any],
    editor: str,
    at: int,
    summary: str = "",
    requirement: Requirement | None = None,
    op_key: str = "",
) -> Version:
    """Version ``n``: ``after``'s fingerprint, what changed since ``before``, and the worker's summary,
    requirement and ledger key for it."""
    changes = {k: (before.get(k), v) for k, v in after.items() if before.get(k) != v}
    return Version(n, after, fingerprint(after), editor, at, changes, summary, requirement, op_key)


def _checked(name: str, text: str, schema: Mapping[str, Any], before: Any) -> Any:
    """One edited value, checked against its recorded schema, in the JSON type the proposal used."""
    if len(text) > MAX_EDITED_CHARS:
        raise EditRefused(f"{name}: at most {MAX_EDITED_CHARS} characters")
    kind = schema.get("type")
    if "enum" in schema and text not in [str(v) for v in schema["enum"]]:
        raise EditRefused(f"{name}: one of {', '.join(str(v) for v in schema['enum'])}")
    if kind == "boolean":
        if text.lower() not in ("true", "false"):
            raise EditRefused(f"{name}: true or false")
        return text.lower() == "true"
    if kind in ("number", "integer"):
        return _number(name, text.strip(), schema, before)
    _check_text(name, text, schema)
    return text


def _number(name: str, text: str, schema: Mapping[str, Any], before: Any) -> Any:
    """A number as a person types it: ASCII digits, an optional minus sign and decimals. Anything else
    (an exponent, another script's digits, "inf", thousands separators) is refused, so what is stored
    and shown is exactly what runs; a decimal kept as text is stored with its usual decimals."""
    example = before if isinstance(before, str | int | float) and not isinstance(before, bool) else "12.50"
    if not PLAIN_NUMBER.match(text):
        if any(c.isdigit() and not c.isascii() for c in text):
            raise EditRefused(f"{name}: use the digits 0-9 (it has digits of another script), e.g. {example}")
        if _LONG_NUMBER.match(text):
            raise EditRefused(f"{name}: too many digits (at most 30 before the point and 30 after)")
        raise EditRefused(f"{name}: a plain number written out in digits 0-9, e.g. {example}")
    with localcontext() as exact:  # 60 digits at most: every operation below is exact, none raises
        exact.prec = 100
        return _checked_number(name, Decimal(text), schema, before, example)


def _checked_number(name: str, value: Decimal, schema: Mapping[str, Any], before: Any, example: Any) -> Any:
    if schema.get("type") == "integer" and value != value.to_integral_value():
        raise EditRefused(f"{name}: a whole number")
    for key, words in _BOUNDS.items():
        if key in schema and not _within(key, value, Decimal(str(schema[key]))):
            raise EditRefused(f"{name}: {words} {schema[key]}")
    step = schema.get("multipleOf")
    if step is not None and Decimal(str(step)) > 0 and value % Decimal(str(step)) != 0:
        raise EditRefused(f"{name}: a multiple of {step}")
    # The proposal's own JSON type: a decimal kept as text ("80.00") stays text, with its decimals.
    if isinstance(before, str):
        places = _places(schema, before)
        if places is not None and value != value.quantize(Decimal(1).scaleb(-places)):
            raise EditRefused(f"{name}: at most {places} decimal places, e.g. {example}")
        return f"{value:.{places}f}" if places is not None else str(value)
    if schema.get("type") == "integer":
        return int(value)
    number = float(value)
    if Decimal(repr(number)) != value:  # a float would store something else than was typed
        raise EditRefused(f"{name}: more digits than this value keeps; round it, e.g. {example}")
    return number


def _places(schema: Mapping[str, Any], before: Any) -> int | None:
    """The decimals a value keeps: the schema's ``multipleOf`` (0.01: 2), else the proposed value's own."""
    step = schema.get("multipleOf")
    if step is not None:
        exponent = Decimal(str(step)).normalize().as_tuple().exponent
        return max(0, -exponent) if isinstance(exponent, int) else None
    if isinstance(before, str) and PLAIN_NUMBER.match(before):
        return len(before.partition(".")[2])
    return None


_BOUNDS = {
    "minimum": "at least",
    "maximum": "at most",
    "exclusiveMinimum": "more than",
    "exclusiveMaximum": "less than",
}


def _within(key: str, value: Decimal, bound: Decimal) -> bool:
    if key == "minimum":
        return value >= bound
    if key == "maximum":
        return value <= bound
    return value > bound if key == "exclusiveMinimum" else value < bound


def _check_text(name: str, text: str, schema: Mapping[str, Any]) -> None:
    if "minLength" in schema and len(text) < int(schema["minLength"]):
        raise EditRefused(f"{name}: at least {schema['minLength']} characters")
    if "maxLength" in schema and len(text) > int(schema["maxLength"]):
        raise EditRefused(f"{name}: at most {schema['maxLength']} characters")
    pattern = schema.get("pattern")
    if isinstance(pattern, str) and re.search(pattern, text) is None:
        raise EditRefused(f"{name}: does not have the expected form")
