"""The parts of the review page about edits: what a reviewer changed, and the "approve with changes" form.

The differences are shown field by field against the arguments as proposed and as each version
left them; an edit form offers only the fields the tool marks editable, prefilled with the current
values. The edit is checked again on the server (``lockgate.approvals.versions``) and by the worker.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from lockgate.approvals.pages import DECISION_FIELD, EDIT_PREFIX, esc, utc_time


@dataclass(frozen=True)
class EditView:
    """One edited version as a page shows it."""

    n: int
    editor: str
    at: int
    changes: list[tuple[str, str, str]]  # (field, before, after)


def shown(value: Any) -> str:
    """A JSON value as a reviewer reads it: text as is, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value)


def edits_section(edits: list[EditView]) -> str:
    """ "Changed by a reviewer": each version's differences, oldest first (empty when never edited)."""
    if not edits:
        return ""
    items = []
    for edit in edits:
        rows = "".join(
            f"<dt>{esc(name.replace('_', ' '))}</dt>"
            f"<dd><del>{esc(before)}</del> → <ins>{esc(after)}</ins></dd>"
            for name, before, after in edit.changes
        )
        items.append(
            f"<h3>Version {edit.n}, edited by {esc(edit.editor)} at {utc_time(edit.at)}</h3><dl>{rows}</dl>"
        )
    return (
        "<h2>Changed by a reviewer</h2>\n<p class=warn>A reviewer changed the assistant's arguments. "
        "Approving approves the latest version below; earlier approvals do not count for it.</p>\n"
        + "\n".join(items)
    )


def edit_fields(editable: list[tuple[str, str, str]]) -> str:
    """Inputs for the editable fields (name, current value, hint) and the "Approve with changes" button."""
    if not editable:
        return ""
    inputs = "".join(
        f'<label for="e_{esc(name)}">{esc(name.replace("_", " "))}'
        + (f" <span class=meta>({esc(hint)})</span>" if hint else "")
        + f'</label><input type=text id="e_{esc(name)}" name="{esc(EDIT_PREFIX + name)}"'
        + f' value="{esc(value)}">'
        for name, value, hint in editable
    )
    return f"""<details>
<summary>Change it before approving</summary>
<p class=meta>Only these fields may be changed. The rules are checked again on the changed
version before it runs; it counts as your approval of the changed version only.</p>
{inputs}
<div class=buttons>
<button type=submit name={DECISION_FIELD} value=edit class=edit>Approve with these changes</button>
</div>
</details>"""


def hint(schema: dict[str, Any]) -> str:
    """A short reminder of an editable field's limits (e.g. "a number, more than 0")."""
    parts = [str(schema.get("description", ""))] if schema.get("description") else []
    for key, words in (("minimum", "at least"), ("exclusiveMinimum", "more than"), ("maximum", "at most")):
        if key in schema:
            parts.append(f"{words} {schema[key]}")
    if "maxLength" in schema:
        parts.append(f"at most {schema['maxLength']} characters")
    return ", ".join(parts)
