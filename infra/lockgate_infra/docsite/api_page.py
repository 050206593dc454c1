"""The API reference for workflow authors (docs/reference/api.md), written out from the docstrings.

Plain Markdown, so it reads the same in the repository as on the site: every name ``lockgate``
exports and the test kit's, grouped as an author meets them, each with its signature, its
docstring, and a table of its fields (their types, defaults and the sentence under each). The code
is read statically with griffe (nothing is imported); ``tests/unit/test_api_reference.py`` fails
when a public name is missing or says nothing, and the docs test when the page is stale.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import griffe

from lockgate_infra.docsite.api_groups import GROUPS, INTRO

ROOT = Path(__file__).resolve().parents[3]
SEARCH_PATHS = [ROOT / "layers" / "core", ROOT / "infra"]
PACKAGES = ("lockgate", "lockgate_infra.testing", "lockgate_infra.stub.scripted")
Doc = Any  # a griffe object as read (a class, function or attribute: each has its own fields)


def loaded() -> griffe.ModulesCollection:
    """The public packages, read from the source."""
    loader = griffe.GriffeLoader(search_paths=[str(path) for path in SEARCH_PATHS])
    for package in PACKAGES:
        loader.load(package)
    return loader.modules_collection


def api_reference(generated: str) -> str:
    """The page, under ``generated`` (the docsite's do-not-edit line)."""
    code = loaded()
    out = [generated, "# API for workflow authors", "", INTRO, ""]
    out += ["Contents: " + ", ".join(f"[{g.title}](#{_anchor(g.title)})" for g in GROUPS) + ".", ""]
    for group in GROUPS:
        out += [f"## {group.title}", "", group.intro, ""]
        if group.imports:
            out += ["```python", group.imports, "```", ""]
        for path in group.names:
            out += list(_entry(path, code.get_member(path)))
    return "\n".join(out).rstrip("\n") + "\n"


def _entry(path: str, found: Doc) -> Iterator[str]:
    obj = found.final_target if isinstance(found, griffe.Alias) else found
    name = path.rsplit(".", 1)[1]
    kind = "fixture" if ".plugin." in path else str(obj.kind.value)
    yield f"### `{name}`"
    yield ""
    yield f"{kind} `{path}`" + ("" if obj.path == path else f", defined in `{obj.module.path}`")
    yield ""
    signature = _signature(name, obj)
    if signature:
        yield from ("```python", *_wrapped(signature), "```", "")
    yield from (*_prose(obj), "")
    if obj.is_class:
        yield from _fields(obj)
        yield from _methods(name, obj)


def _signature(name: str, obj: Doc) -> str:
    if obj.is_function:
        return f"{name}({_parameters(obj)})" + (f" -> {obj.returns}" if obj.returns else "")
    if obj.is_class and "__init__" in obj.members and not obj.members["__init__"].is_alias:
        return f"{name}({_parameters(obj.members['__init__'])})"
    if obj.is_class and "dataclass" in obj.labels:
        fields = [m for m in _public(obj) if m.is_attribute and "property" not in m.labels]
        return f"{name}({', '.join(_field_parameter(m) for m in fields)})"
    if obj.is_attribute and obj.value is not None:
        return f"{name} = {obj.value}"
    return ""


def _wrapped(signature: str, width: int = 100) -> list[str]:
    """A long signature one parameter a line, as a formatter would write it."""
    if len(signature) <= width or "(" not in signature:
        return [signature]
    head, _, rest = signature.partition("(")
    inner, _, tail = rest.rpartition(")")
    parts, depth, current = [], 0, ""
    for char in inner:  # split on the commas between parameters, not those inside brackets
        depth += char in "[("
        depth -= char in "])"
        if char == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += char
    parts.append(current.strip())
    return [f"{head}(", *(f"    {part}," for part in parts if part), f"){tail}"]


def _parameters(function: Doc) -> str:
    shown: list[str] = []
    star = False
    for parameter in function.parameters:
        if parameter.name in ("self", "cls"):
            continue
        kind = parameter.kind.value if parameter.kind else ""
        if kind == "keyword-only" and not star:
            shown.append("*")
            star = True
        prefix = "*" if kind == "variadic positional" else "**" if kind == "variadic keyword" else ""
        star = star or kind == "variadic positional"
        text = f"{prefix}{parameter.name}"
        if parameter.annotation is not None:
            text += f": {parameter.annotation}"
        if parameter.default is not None and not prefix:
            text += f" = {parameter.default}"
        shown.append(text)
    return ", ".join(shown)


def _field_parameter(member: Doc) -> str:
    default = _default(member)
    return f"{member.name}: {member.annotation}" + (f" = {default}" if default != "required" else "")


def _public(obj: Doc) -> list[Doc]:
    return [m for n, m in obj.members.items() if not n.startswith("_") and not m.is_alias]


def _fields(obj: Doc) -> Iterator[str]:
    rows = []
    for member in (m for m in _public(obj) if m.is_attribute):
        default = "(read-only property)" if "property" in member.labels else _default(member)
        if {"property", "writable"} <= set(member.labels):
            default = "(property)"
        kind = f"`{member.annotation}`" if member.annotation is not None else ""
        meaning = " ".join(line.strip() for line in _prose(member) if line.strip())
        rows.append([f"`{member.name}`", kind, default, meaning])
    if not rows:
        return
    typed = any(row[1] or row[2] for row in rows)  # else: attributes the constructor sets
    header = ["field", "type", "default", "meaning"] if typed else ["attribute", "meaning"]
    yield "| " + " | ".join(header) + " |"
    yield "|" + "---|" * len(header)
    for row in rows:
        cells = row if typed else [row[0], row[3]]
        yield "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"
    yield ""


def _methods(name: str, obj: Doc) -> Iterator[str]:
    methods = [m for m in _public(obj) if m.is_function]
    for method in methods:
        returns = f" -> {method.returns}" if method.returns else ""
        said = " ".join(line.strip() for line in _prose(method) if line.strip())
        yield f"- `{name}.{method.name}({_parameters(method)}){returns}`: {said}"
    if methods:
        yield ""


def _default(member: Doc) -> str:
    value = member.value
    dataclass_field = member.parent is not None and "dataclass" in member.parent.labels
    if value is None:
        return "required" if dataclass_field else ""
    if not dataclass_field and "class-attribute" not in member.labels:
        return ""  # set by the constructor: its parameters say what from
    text = str(value)
    factory = re.fullmatch(r"field\(default_factory=(\w+)\)", text)
    if factory:
        return {"dict": "`{}`", "list": "`[]`", "tuple": "`()`", "set": "`set()`"}.get(
            factory.group(1), f"`{factory.group(1)}()`"
        )
    return f"`{text}`"


def _prose(obj: Doc) -> list[str]:
    """The docstring as Markdown lines: ``x`` as `x`, a ``::`` block as fenced Python."""
    text = obj.docstring.value if obj.docstring else ""
    lines: list[str] = []
    block: list[str] | None = None
    for line in text.splitlines():
        if block is not None:
            if line.strip() and not line.startswith("    "):
                lines += ["```python", *_dedent(block), "```", ""]
                block = None
            else:
                block.append(line)
                continue
        if line.rstrip().endswith("::"):
            lines.append(line.rstrip()[:-1])
            block = []
            continue
        lines.append(line.replace("``", "`"))
    if block is not None:
        lines += ["```python", *_dedent(block), "```"]
    return lines


def _dedent(block: list[str]) -> list[str]:
    while block and not block[0].strip():
        block = block[1:]
    while block and not block[-1].strip():
        block = block[:-1]
    return [line[4:] if line.startswith("    ") else line for line in block]


def _anchor(title: str) -> str:
    return re.sub(r"[^a-z0-9 -]", "", title.lower()).replace(" ", "-")
