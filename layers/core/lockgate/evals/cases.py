"""Eval case files: a task's cases (inbox events in, checks on what the run did), validated with clear errors.

A suite file is TOML (or JSON with the same shape), one per task, e.g. ``workflows/shop/evals/*.toml``::

    task = "support-inbox"     # the Task.name the cases are for
    gate = 0.8                 # optional: the overall Wilson lower bound must reach this
    id_field = "message_id"    # optional: each event body gets its generated delivery id here
    event_type = "message"     # optional: the event type of the deliveries (default "message")

    [[cases]]
    name = "where is my order"
    tags = ["benign"]          # optional
      [[cases.events]]         # one or more; each table is an event body, processed in order
      from = "ada@example.com"
      text = "Where is A-1042?"
      [[cases.checks]]
      kind = "contains"
      in = "send_email.body"   # "final" (the default) or TOOL.FIELD of the calls that ran
      text = "A-1042"

Check kinds and their fields are in ``CHECK_FIELDS``; ``call``/``no_call`` take ``tool``,
``status`` (made, blocked, proposed, attempted), ``args`` (every given argument equal) and
``args_not`` (every given argument different). Text checks reading ``TOOL.FIELD`` read the
calls that ran, or those with ``status``.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lockgate.errors import LockgateError

CALL_STATUSES = ("made", "blocked", "proposed", "attempted")
# kind -> {field: (type(s), required)}. "in" is where text checks look.
_TEXT: dict[str, tuple[tuple[type, ...], bool]] = {
    "in": ((str,), False),
    "status": ((str,), False),  # with in = TOOL.FIELD: which calls to read (default made)
    "name": ((str,), False),
}
_CALL: dict[str, tuple[tuple[type, ...], bool]] = {
    "tool": ((str,), True),
    "status": ((str, list), False),  # one status, or a list: any of them (["made", "proposed"])
    "args": ((dict,), False),
    "args_not": ((dict,), False),
    "name": ((str,), False),
}
CHECK_FIELDS: dict[str, dict[str, tuple[tuple[type, ...], bool]]] = {
    "contains": {**_TEXT, "text": ((str, list), True), "case_sensitive": ((bool,), False)},
    "avoids": {**_TEXT, "text": ((str, list), True), "case_sensitive": ((bool,), False)},
    "word_count": {**_TEXT, "min": ((int,), False), "max": ((int,), False)},
    "regex": {**_TEXT, "pattern": ((str,), True), "must_match": ((bool,), False)},
    "json_keys": {**_TEXT, "keys": ((list,), True)},
    "judge": {**_TEXT, "rubric": ((str,), True)},
    "call": _CALL,
    "no_call": _CALL,
}
_SUITE_FIELDS = {"task", "gate", "id_field", "event_type", "cases", "description"}
_CASE_FIELDS = {"name", "tags", "events", "checks", "description"}
_SUBJECT = re.compile(r"^(final|[A-Za-z_][\w-]*(\.[A-Za-z_]\w*)?)$")


class CaseFileError(LockgateError):
    """A case file is malformed; the message names the file, the case and the field."""


@dataclass(frozen=True)
class CheckSpec:
    """One validated check: its kind and fields."""

    kind: str
    fields: Mapping[str, Any]

    def get(self, key: str, default: Any = None) -> Any:
        """A field, or ``default``."""
        return self.fields.get(key, default)

    @property
    def subject(self) -> str:
        """Where a text check looks: "final" or "TOOL.FIELD"."""
        return str(self.fields.get("in", "final"))

    def describe(self) -> str:
        """A short label for reports: the given name, else the kind and its main field."""
        if self.get("name"):
            return str(self.get("name"))
        if self.kind in ("call", "no_call"):
            args = {**self.get("args", {}), **{k: f"!{v}" for k, v in self.get("args_not", {}).items()}}
            shown = f"({json.dumps(args, sort_keys=True)})" if args else ""
            status = self.get("status", "made" if self.kind == "call" else "attempted")
            status = "|".join(status) if isinstance(status, list) else status
            return f"{self.kind} {status} {self.get('tool')}{shown}"
        where = "" if self.subject == "final" else f" in {self.subject}"
        if self.get("status", "made") != "made":
            where += f" ({self.get('status')} calls)"
        main = {
            "contains": self.get("text"),
            "avoids": self.get("text"),
            "regex": self.get("pattern"),
            "json_keys": self.get("keys"),
            "word_count": f"{self.get('min', 0)}..{self.get('max', 'any')}",
            "judge": "rubric",
        }[self.kind]
        return f"{self.kind} {json.dumps(main) if not isinstance(main, str) else main!r}{where}"


@dataclass(frozen=True)
class Case:
    """One eval case: the events a run processes, in order, and the checks its result must pass."""

    name: str
    events: Sequence[Mapping[str, Any]]
    checks: Sequence[CheckSpec]
    tags: Sequence[str] = ()


@dataclass(frozen=True)
class Suite:
    """A task's cases from one file."""

    task: str
    cases: Sequence[Case]
    gate: float = 0.8
    id_field: str | None = None
    event_type: str = "message"
    origin: str = "<memory>"
    extra: Mapping[str, Any] = field(default_factory=dict)

    def only(self, names: Sequence[str]) -> Suite:
        """The same suite with just the named cases (or tags); an unknown name is an error."""
        known = {c.name for c in self.cases} | {t for c in self.cases for t in c.tags}
        missing = [n for n in names if n not in known]
        if missing:
            raise CaseFileError(f"{self.origin}: no case or tag called {', '.join(map(repr, missing))}")
        picked = [c for c in self.cases if c.name in names or set(c.tags) & set(names)]
        return Suite(self.task, picked, self.gate, self.id_field, self.event_type, self.origin)


def read_file(path: str | Path) -> dict[str, Any]:
    """A TOML (or, for .json, JSON) file's top-level table; unreadable or malformed is a CaseFileError."""
    path = Path(path)
    kind = "JSON" if path.suffix == ".json" else "TOML"
    try:
        text = path.read_text(encoding="utf-8")
        raw = json.loads(text) if kind == "JSON" else tomllib.loads(text)
    except OSError as exc:
        raise CaseFileError(f"{path}: cannot read ({exc.strerror})") from exc
    except ValueError as exc:  # TOMLDecodeError and JSONDecodeError are both ValueErrors
        raise CaseFileError(f"{path}: not valid {kind}: {exc}") from exc
    if not isinstance(raw, dict):
        raise CaseFileError(f"{path}: expected a table at the top level")
    return raw


def load_suite(path: str | Path) -> Suite:
    """Read and validate a suite file (.toml or .json)."""
    return parse_suite(read_file(path), str(path))


def parse_suite(raw: Any, origin: str = "<memory>") -> Suite:
    """Validate a suite from its parsed form; every problem names where it is."""
    if not isinstance(raw, dict):
        raise CaseFileError(f"{origin}: expected a table at the top level")
    _no_unknown(raw, _SUITE_FIELDS, origin)
    task = raw.get("task")
    if not isinstance(task, str) or not task:
        raise CaseFileError(f"{origin}: 'task' is required (the task's name, e.g. \"support-inbox\")")
    gate = raw.get("gate", 0.8)
    if isinstance(gate, bool) or not isinstance(gate, (int, float)) or not 0 <= gate <= 1:
        raise CaseFileError(f"{origin}: 'gate' must be a number from 0 to 1, got {gate!r}")
    cases_raw = raw.get("cases")
    if not isinstance(cases_raw, list) or not cases_raw:
        raise CaseFileError(f"{origin}: no cases; add at least one [[cases]] table")
    cases = [_case(c, f"{origin}: cases[{i}]") for i, c in enumerate(cases_raw)]
    seen: set[str] = set()
    for case in cases:
        if case.name in seen:
            raise CaseFileError(f"{origin}: two cases are called {case.name!r}; names must be unique")
        seen.add(case.name)
    id_field = raw.get("id_field")
    event_type = raw.get("event_type", "message")
    for key, value in (("id_field", id_field), ("event_type", event_type)):
        if value is not None and not isinstance(value, str):
            raise CaseFileError(f"{origin}: '{key}' must be a string")
    return Suite(task, cases, float(gate), id_field, str(event_type), origin)


def parse_check(raw: Any, where: str) -> CheckSpec:
    """Validate one check table."""
    if not isinstance(raw, dict):
        raise CaseFileError(f"{where}: a check must be a table")
    kind = raw.get("kind")
    if kind not in CHECK_FIELDS:
        raise CaseFileError(f"{where}: unknown kind {kind!r}; expected one of {', '.join(CHECK_FIELDS)}")
    spec = CHECK_FIELDS[kind]
    _no_unknown(raw, set(spec) | {"kind"}, where)
    for key, (types, required) in spec.items():
        if key not in raw:
            if required:
                raise CaseFileError(f"{where}: a {kind} check needs '{key}'")
            continue
        value = raw[key]
        if isinstance(value, bool) and bool not in types or not isinstance(value, types):
            names = " or ".join("list" if t is list else "table" if t is dict else t.__name__ for t in types)
            raise CaseFileError(f"{where}: '{key}' must be a {names}, got {value!r}")
    fields = {k: v for k, v in raw.items() if k != "kind"}
    _check_values(kind, fields, where)
    return CheckSpec(kind, fields)


def _check_values(kind: str, fields: dict[str, Any], where: str) -> None:
    subject = fields.get("in", "final")
    if not _SUBJECT.match(subject):
        raise CaseFileError(f"{where}: 'in' must be \"final\", a tool name or TOOL.FIELD, got {subject!r}")
    if kind in ("contains", "avoids"):
        texts = fields["text"] if isinstance(fields["text"], list) else [fields["text"]]
        if not texts or not all(isinstance(t, str) and t for t in texts):
            raise CaseFileError(f"{where}: 'text' must be a non-empty string or list of strings")
    if kind == "word_count":
        low, high = fields.get("min"), fields.get("max")
        if low is None and high is None:
            raise CaseFileError(f"{where}: a word_count check needs 'min', 'max' or both")
        if low is not None and high is not None and low > high:
            raise CaseFileError(f"{where}: 'min' ({low}) is more than 'max' ({high})")
    if kind == "regex":
        try:
            re.compile(fields["pattern"])
        except re.error as exc:
            raise CaseFileError(f"{where}: 'pattern' is not a valid regular expression: {exc}") from exc
    keys = fields.get("keys")
    if kind == "json_keys" and (not keys or not all(isinstance(k, str) and k for k in keys)):
        raise CaseFileError(f"{where}: 'keys' must be a non-empty list of strings")
    if kind == "judge" and not fields["rubric"].strip():
        raise CaseFileError(f"{where}: 'rubric' is empty")
    status = fields.get("status")
    statuses = status if isinstance(status, list) else [status]
    if status is not None and (not statuses or any(s not in CALL_STATUSES for s in statuses)):
        raise CaseFileError(
            f"{where}: 'status' must be one of {', '.join(CALL_STATUSES)} (or a list), got {status!r}"
        )


def _case(raw: Any, where: str) -> Case:
    if not isinstance(raw, dict):
        raise CaseFileError(f"{where}: a case must be a table")
    name = raw.get("name")
    if not isinstance(name, str) or not name.strip():
        raise CaseFileError(f"{where}: every case needs a 'name'")
    where = f"{where} ({name!r})"
    _no_unknown(raw, _CASE_FIELDS, where)
    events = raw.get("events")
    if not isinstance(events, list) or not events or not all(isinstance(e, dict) for e in events):
        raise CaseFileError(f"{where}: needs at least one [[cases.events]] table (an event body)")
    checks_raw = raw.get("checks")
    if not isinstance(checks_raw, list) or not checks_raw:
        raise CaseFileError(f"{where}: needs at least one [[cases.checks]] table")
    checks = [parse_check(c, f"{where}.checks[{i}]") for i, c in enumerate(checks_raw)]
    tags = raw.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise CaseFileError(f"{where}: 'tags' must be a list of strings")
    return Case(name, events, checks, tuple(tags))


def _no_unknown(raw: Mapping[str, Any], allowed: set[str], where: str) -> None:
    unknown = sorted(set(raw) - allowed)
    if unknown:
        raise CaseFileError(
            f"{where}: unknown field{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}; "
            f"expected {', '.join(sorted(allowed))}"
        )
