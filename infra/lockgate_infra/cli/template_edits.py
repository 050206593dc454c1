"""Adding a resource to template.yaml as a person would: lines inserted in the right places, the rest kept.

A YAML round trip would re-flow lines and drop comments of a template that is the user's own, so
the edit finds its places by the template's structure (top-level keys at two spaces, a function's
``Variables:``, a role's policy ``Statement:``) and inserts lines with the indentation found there.
A place it cannot find is a TemplateEditError naming it, and nothing is changed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


class TemplateEditError(ValueError):
    """template.yaml does not have a place the edit needs (the message names it)."""


@dataclass(frozen=True)
class TemplateEdit:
    """A resource, its name in some functions' environment, and one IAM statement for it."""

    resource: str  # the resource's lines, indented two spaces, appended at the end of Resources
    variable: tuple[str, str]  # (NAME, "!Ref Resource"): added to each function's Variables
    functions: tuple[str, ...]
    role: str  # the role whose first inline policy gets the statement
    statement: tuple[str, tuple[str, ...], str]  # (Sid, actions, "!GetAtt X.Arn")


def edit_template(text: str, edit: TemplateEdit) -> str:
    """``text`` with the edit made; TemplateEditError if a place is missing."""
    lines = text.splitlines(keepends=True)
    insertions: list[tuple[int, list[str]]] = []  # (line index to insert before, lines)
    insertions.append((_end_of_resources(lines), ["\n", *edit.resource.splitlines(keepends=True)]))
    name, value = edit.variable
    for function in edit.functions:
        at, indent = _after(lines, function, re.compile(r"^(\s+)Variables:\s*$"), "Environment Variables")
        insertions.append((at, [f"{indent}  {name}: {value}\n"]))
    sid, actions, arn = edit.statement
    at, indent = _statement_place(lines, edit.role)
    statement = [f"{indent}- Sid: {sid}\n", f"{indent}  Effect: Allow\n", f"{indent}  Action:\n"]
    statement += [f"{indent}    - {action}\n" for action in actions]
    statement.append(f"{indent}  Resource: {arn}\n")
    insertions.append((at, statement))
    for at, new in sorted(insertions, key=lambda pair: pair[0], reverse=True):
        lines[at:at] = new
    return "".join(lines)


def _block(lines: list[str], logical_id: str) -> tuple[int, int]:
    """The line range of a top-level resource ``  logical_id:`` (to the next one at that depth)."""
    start = next((n for n, line in enumerate(lines) if line.rstrip() == f"  {logical_id}:"), None)
    if start is None:
        raise TemplateEditError(f"template.yaml has no resource {logical_id}")
    end = next((n for n in range(start + 1, len(lines)) if re.match(r"^(  )?[A-Za-z]", lines[n])), len(lines))
    return start, end


def _after(lines: list[str], logical_id: str, pattern: re.Pattern[str], what: str) -> tuple[int, str]:
    """The line after the first ``pattern`` match inside ``logical_id``'s block, and its indentation."""
    start, end = _block(lines, logical_id)
    for n in range(start, end):
        found = pattern.match(lines[n])
        if found:
            return n + 1, found.group(1)
    raise TemplateEditError(f"template.yaml: {logical_id} has no {what}")


def _statement_place(lines: list[str], role: str) -> tuple[int, str]:
    """Where a statement goes in ``role``'s first inline policy: before its first statement."""
    document, _ = _after(lines, role, re.compile(r"^(\s+)PolicyDocument:\s*$"), "inline policy (Policies)")
    _, end = _block(lines, role)
    for n in range(document, end):
        if re.match(r"^\s+Statement:\s*$", lines[n]):
            for m in range(n + 1, end):
                text = lines[m].strip()
                if not text or text.startswith("#"):
                    continue
                item = re.match(r"^(\s+)- ", lines[m])
                if item is not None:
                    return m, item.group(1)
                break
            break
    raise TemplateEditError(f"template.yaml: {role}'s inline policy has no Statement list")


def _end_of_resources(lines: list[str]) -> int:
    start = next((n for n, line in enumerate(lines) if line.rstrip() == "Resources:"), None)
    if start is None:
        raise TemplateEditError("template.yaml has no Resources section")
    end = next((n for n in range(start + 1, len(lines)) if re.match(r"^[A-Za-z]", lines[n])), len(lines))
    while end > start + 1 and not lines[end - 1].strip():
        end -= 1  # before the blank lines that end the section
    return end
