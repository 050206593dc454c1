"""How the Slack stand-in shows a message on the console: its text, and each button's action id and
value, with the command that clicks one (``lockgate local slack click``) and, for an Edit button, the
one that edits (``lockgate local slack edit``); and each modal it opened."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lockgate.approvals.slack_messages import EDIT_ACTION
from lockgate_infra.local.slack_modals import modal_lines

CLICK = "lockgate local slack click"
EDIT = "lockgate local slack edit"


@dataclass(frozen=True)
class Button:
    """A button of a Block Kit message."""

    text: str
    action_id: str
    value: str


def buttons(blocks: Any) -> list[Button]:
    """Every button in a message's ``actions`` blocks, in order."""
    found = []
    for block in blocks if isinstance(blocks, list) else []:
        if not isinstance(block, dict) or block.get("type") != "actions":
            continue
        for element in block.get("elements") or []:
            if isinstance(element, dict) and element.get("type") == "button":
                label = element.get("text")
                text = str(label.get("text", "")) if isinstance(label, dict) else str(label or "")
                found.append(Button(text, str(element.get("action_id", "")), str(element.get("value", ""))))
    return found


def call_lines(kind: str, body: Mapping[str, Any], answer: Mapping[str, Any], ts: str) -> list[str]:
    """The console's lines for one call the stand-in answered (``ts``: the message it made or changed)."""
    text = _text(body)
    if not answer.get("ok"):
        return [f"[slack] {kind} refused ({answer.get('error')}): {text}"]
    if kind == "views.open":
        return modal_lines({"id": ts, "view": body.get("view") or {}})
    if kind == "conversations.history":
        found = len(answer.get("messages") or [])
        return [f"[slack] conversations.history of {body.get('channel', '?')}: {found} message(s)"]
    if kind == "chat.postMessage":
        head = f"[slack] chat.postMessage to {body.get('channel', '?')} (message {ts}): {text}"
    elif kind == "chat.update":
        head = f"[slack] chat.update of message {ts}: {text}"
    elif body.get("replace_original"):
        head = f"[slack] answer to a click, replacing message {ts or '?'}: {text}"
    else:
        head = f"[slack] answer to a click, only the clicker sees it: {text}"
    return [head, *button_lines(buttons(body.get("blocks")))]


def message_lines(message: Mapping[str, Any]) -> list[str]:
    """A message as it stands in the stand-in's channel (``lockgate local slack messages``)."""
    head = f"[slack] message {message.get('ts')} in {message.get('channel', '?')}: {_text(message)}"
    return [head, *button_lines(buttons(message.get("blocks")))]


def button_lines(found: Sequence[Button]) -> list[str]:
    """One line per button, then how to click the first from the command line."""
    lines = [f"[slack]   button {b.text!r}: action_id {b.action_id}, value {b.value}" for b in found]
    if found:
        first = found[0]
        lines.append(
            f"[slack]   click: {CLICK} {first.action_id} {short_value(first.value)} --user SLACK_USER_ID"
        )
    for edit in (b for b in found if b.action_id == EDIT_ACTION):  # Lockgate's Edit: a modal to submit
        lines.append(
            f"[slack]   edit: {EDIT} {short_value(edit.value)} --set NAME=VALUE --user SLACK_USER_ID"
        )
    return lines


def short_value(value: str) -> str:
    """What to type for a value: its part before the first ``|`` (the click matches a prefix)."""
    return value.split("|", 1)[0] or value


def _text(body: Mapping[str, Any]) -> str:
    return " ".join(str(body.get("text", "")).split())[:200]
