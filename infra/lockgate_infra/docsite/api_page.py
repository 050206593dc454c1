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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import griffe

ROOT = Path(__file__).resolve().parents[3]
SEARCH_PATHS = [ROOT / "layers" / "core", ROOT / "infra"]
PACKAGES = ("lockgate", "lockgate_infra.testing", "lockgate_infra.stub.scripted")
Doc = Any  # a griffe object as read (a class, function or attribute: each has its own fields)


@dataclass(frozen=True)
class Group:
    """One section of the page: a title, what it is for, the import line, and its names in order."""

    title: str
    intro: str
    imports: str
    names: tuple[str, ...]  # each shown under its public path (lockgate.Task), read where defined


INTRO = """\
Everything a workflows package imports, written out from the code's docstrings: every name
`lockgate` exports and the test kit, `lockgate_infra.testing`. A field's sentence says what it
means and what its default does. `python -m lockgate_infra.docsite` writes this page; a test fails
when a public name, or a field of one, has no docstring, or when the page is stale."""

GROUPS = (
    Group(
        "A task",
        "A task says what starts it (a source and event type, or a schedule), what the model is told, "
        "the tools it may call and its limits; its `start` turns the event into the first message and "
        "the run's facts, or says `Skip` for an event the task does not act on.",
        "from lockgate import DecisionNotice, InboxEvent, Skip, Start, Task",
        (
            "lockgate.Task",
            "lockgate.Start",
            "lockgate.Skip",
            "lockgate.InboxEvent",
            "lockgate.DecisionNotice",
        ),
    ),
    Group(
        "Tools and their checks",
        "A tool is a function with a pydantic argument model and a risk level. Every call is checked "
        "in order (allowed for the task, the arguments' schema, hard policies, taint, approval "
        "thresholds), then a side effect runs once, through the operation ledger.",
        "from lockgate import OutcomeUnknown, Risk, Tool, ToolContext, ToolError\n"
        "from lockgate import describe_validation_error, fingerprint",
        (
            "lockgate.Tool",
            "lockgate.Risk",
            "lockgate.ToolContext",
            "lockgate.ToolError",
            "lockgate.OutcomeUnknown",
            "lockgate.describe_validation_error",
            "lockgate.fingerprint",
        ),
    ),
    Group(
        "Facts and policies",
        "Facts come from your own systems, never from the model or what it read; policies are pure "
        "functions of a call's validated arguments and those facts, and answer with a `Verdict`.",
        "from lockgate import Fact, Policy, RunFacts, Verdict",
        ("lockgate.RunFacts", "lockgate.Policy", "lockgate.Verdict", "lockgate.Fact"),
    ),
    Group(
        "Registering a workflow and its resources",
        "A workflows package has a `register(setup)` function, which the functions that load "
        "workflows (the agent worker, the scheduled jobs) call at start, and declares the AWS "
        "resources it uses in `RESOURCES`; the example is `workflows/shop/__init__.py`. Besides "
        "tasks, it may route an event to a plain handler, `handler(event, context) -> str`.",
        "from lockgate import BadDelivery, Part, Resource, Setup, TaskContext",
        (
            "lockgate.Setup",
            "lockgate.Resource",
            "lockgate.Part",
            "lockgate.TaskContext",
            "lockgate.BadDelivery",
        ),
    ),
    Group(
        "Structured intake",
        "Before a task acts, an intake can read the request out of the event into a pydantic model "
        "with structured output, trying a cheap model first and handing the event to a person when "
        "none succeeds.",
        "from lockgate import Intake, values_in_source",
        ("lockgate.Intake", "lockgate.values_in_source"),
    ),
    Group(
        "Testing your workflow",
        "A scripted model answers your task with calls to your tools, and `TestStack` runs your "
        "workflows on the embedded stack in the test's own process. The pytest plugin comes with "
        "Lockgate: a test names the fixture `lockgate_stack` and gets a started stack, without an "
        "import. `RecordingApi` plays an outside API your tools call, recording each call by its "
        "idempotency key. Where a `ScriptedModel`'s rules cannot say what your model should do, write "
        "it by hand on a `Conversation`, as the example shop's is (`workflows/shop/offline/`).",
        "from lockgate_infra.testing import Call, Rule, ScriptError, ScriptedModel, call, when\n"
        "from lockgate_infra.testing import LedgerView, Sent, TestStack, TestStackError\n"
        "from lockgate_infra.testing import RecordedCall, RecordingApi\n"
        "from lockgate_infra.testing import Conversation, Reply, ToolCall",
        (
            "lockgate_infra.testing.ScriptedModel",
            "lockgate_infra.testing.when",
            "lockgate_infra.testing.call",
            "lockgate_infra.stub.scripted.When",
            "lockgate_infra.testing.Rule",
            "lockgate_infra.testing.Call",
            "lockgate_infra.testing.ScriptError",
            "lockgate_infra.testing.TestStack",
            "lockgate_infra.testing.Sent",
            "lockgate_infra.testing.TestStackError",
            "lockgate_infra.testing.LedgerView",
            "lockgate_infra.testing.RecordingApi",
            "lockgate_infra.testing.RecordedCall",
            "lockgate_infra.testing.Conversation",
            "lockgate_infra.testing.Reply",
            "lockgate_infra.testing.ToolCall",
        ),
    ),
    Group(
        "Fixtures",
        "A test asks for one by name. To give `lockgate_stack` your model, define a fixture called "
        "`lockgate_model` (in your `conftest.py` or the test module) that returns it; to point your "
        "adapters at stand-ins, one called `lockgate_environment`.",
        "",
        (
            "lockgate_infra.testing.plugin.lockgate_model",
            "lockgate_infra.testing.plugin.lockgate_environment",
            "lockgate_infra.testing.plugin.lockgate_stack",
        ),
    ),
)


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
