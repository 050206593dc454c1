"""The modals the Slack stand-in opened (``views.open``): how the console shows one, and the
``view_submission`` payload Slack sends when someone submits it with values typed in its fields.

A modal's inputs are its ``input`` blocks: each has a block id and one element whose action id and
``initial_value`` Slack keeps as the field's state until it is submitted, so a submission carries
every field, changed or not, as Slack's does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lockgate.approvals.slack_modal import FIELD_BLOCK


@dataclass(frozen=True)
class ModalField:
    """One input of a modal: its block and action ids, its label and the value it opened with."""

    block_id: str
    action_id: str
    label: str
    initial: str

    @property
    def name(self) -> str:
        """What ``--set NAME=VALUE`` calls it: a Lockgate field's name (``amount``), else its block id."""
        return self.block_id.removeprefix(FIELD_BLOCK)


def modal_fields(view: Mapping[str, Any]) -> list[ModalField]:
    """Every input of a modal, in order."""
    found = []
    for block in view.get("blocks") or []:
        if not isinstance(block, dict) or block.get("type") != "input":
            continue
        element: dict[str, Any] = block["element"] if isinstance(block.get("element"), dict) else {}
        label: dict[str, Any] = block["label"] if isinstance(block.get("label"), dict) else {}
        found.append(
            ModalField(
                str(block.get("block_id", "")),
                str(element.get("action_id", "")),
                str(label.get("text", "")),
                str(element.get("initial_value", "")),
            )
        )
    return found


def modal_lines(opened: Mapping[str, Any]) -> list[str]:
    """The console's lines for a modal the stand-in opened: its title and each field as it opened."""
    view = opened.get("view") or {}
    title = (view.get("title") or {}).get("text", "")
    head = f"[slack] views.open (view {opened.get('id')}): modal {title!r}"
    return [head, *(f"[slack]   field {f.name!r}: {f.initial}" for f in modal_fields(view))]


def submission_payload(  # noqa: PLR0913 - who submits, from where, with what
    opened: Mapping[str, Any],
    user: str,
    values: Mapping[str, str],
    *,
    team: str,
    enterprise: str | None = None,
    trigger_id: str = "3.4.local",
) -> dict[str, Any]:
    """A view_submission payload for the modal ``opened``: each field as typed in ``values`` (by name),
    the others as they opened (KeyError names a field the modal does not have)."""
    fields = modal_fields(opened["view"])
    unknown = set(values) - {f.name for f in fields}
    if unknown:
        raise KeyError(sorted(unknown)[0])
    view = opened["view"]
    state = {
        f.block_id: {f.action_id: {"type": "plain_text_input", "value": values.get(f.name, f.initial)}}
        for f in fields
    }
    return {
        "type": "view_submission",
        "team": {"id": team, "domain": team.lower()},
        "user": {"id": user, "username": user.lower(), "team_id": team},
        "enterprise": None if enterprise is None else {"id": enterprise, "name": enterprise.lower()},
        "api_app_id": "A0LOCAL",
        "is_enterprise_install": False,
        "trigger_id": trigger_id,
        "view": {
            **view,
            "id": opened["id"],
            "team_id": team,
            "state": {"values": state},
            "hash": f"{opened['id']}.local",
        },
        "response_urls": [],
    }
