"""A plain HTML rendering of the Block Kit the stack sent to the Slack stand-in: a message with its
buttons, and a modal with its fields, for the docs' pictures (``tests/e2e/test_slack_screenshots.py``).

It draws only what the blocks say (the block types Lockgate sends: section, context, actions, input),
in a look close to Slack's, and says on the page that it is the stand-in's rendering, not Slack's
own screen: Slack shows a mention as the person's name, this shows the user id it was given.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from typing import Any

LABEL = "Rendered by Lockgate's Slack stand-in from the Block Kit the stack sent; not Slack's own screen."
_BOLD = re.compile(r"\*([^*\n]+)\*")
_MENTION = re.compile(r"<@([A-Z0-9]+)>")  # Slack's mention syntax, in the raw mrkdwn
_STYLE = """
body { font: 15px/1.45 -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif; color: #1d1c1d;
       margin: 0; background: #fff; }
.channel { padding: 16px 20px; max-width: 760px; }
.msg { display: flex; gap: 10px; }
.avatar { width: 36px; height: 36px; border-radius: 6px; background: #4a154b; color: #fff;
          font-weight: 700; display: flex; align-items: center; justify-content: center; flex: none; }
.who b { margin-right: 6px; } .app { font-size: 10px; background: #e8e8e8; color: #616061;
        padding: 1px 4px; border-radius: 3px; vertical-align: 2px; }
.block { margin: 4px 0 6px; white-space: pre-wrap; }
.context { color: #616061; font-size: 13px; }
.mention { background: #e8f5fa; color: #1264a3; border-radius: 3px; padding: 0 2px; }
.buttons { display: flex; gap: 8px; margin: 8px 0; }
.button { border: 1px solid #bbb; border-radius: 4px; padding: 3px 12px; font-weight: 700; font-size: 14px;
          background: #fff; }
.primary { background: #007a5a; border-color: #007a5a; color: #fff; }
.danger { background: #fff; border-color: #e01e5a; color: #e01e5a; }
.backdrop { background: rgba(29, 28, 29, .55); padding: 28px; }
.modal { background: #fff; border-radius: 8px; max-width: 520px; margin: 0 auto;
         box-shadow: 0 4px 18px rgba(0,0,0,.3); }
.modal header { display: flex; justify-content: space-between; padding: 18px 24px; font-size: 20px;
                font-weight: 900; border-bottom: 1px solid #ddd; }
.modal .body { padding: 12px 24px; }
.modal footer { display: flex; justify-content: flex-end; gap: 8px; padding: 16px 24px;
                border-top: 1px solid #ddd; }
label { display: block; font-weight: 700; margin-top: 12px; }
.input { border: 1px solid #868686; border-radius: 4px; padding: 8px 10px; margin: 6px 0 4px; }
.hint { color: #616061; font-size: 13px; }
.label { color: #616061; font-size: 12px; padding: 8px 20px 12px; font-style: italic; }
"""


def message_page(message: Mapping[str, Any], app: str = "Lockgate") -> str:
    """One message of the stand-in's channel (its blocks, else its text), as a page."""
    blocks = message.get("blocks") or [
        {"type": "section", "text": {"type": "plain_text", "text": message.get("text", "")}}
    ]
    body = "".join(_block(b) for b in blocks)
    return _page(
        f"<div class=channel><div class=msg><div class=avatar>{html.escape(app[:1])}</div><div>"
        f"<div class=who><b>{html.escape(app)}</b><span class=app>APP</span></div>{body}</div></div></div>"
    )


def modal_page(view: Mapping[str, Any]) -> str:
    """A modal the stand-in was asked to open (``views.open``), as a page."""
    title = _text(view.get("title"))
    buttons = "".join(
        f"<span class='button{cls}'>{_text(view.get(key))}</span>"
        for key, cls in (("close", ""), ("submit", " primary"))
        if view.get(key)
    )
    body = "".join(_block(b) for b in view.get("blocks") or [])
    return _page(
        f"<div class=backdrop><div class=modal><header><span>{title}</span><span>×</span></header>"
        f"<div class=body>{body}</div><footer>{buttons}</footer></div></div>"
    )


def _page(content: str) -> str:
    return (
        f"<!doctype html><html><head><meta charset=utf-8><style>{_STYLE}</style></head>"
        f"<body>{content}<div class=label>{html.escape(LABEL)}</div></body></html>"
    )


def _block(block: Mapping[str, Any]) -> str:
    kind = block.get("type")
    if kind == "section":
        return f"<div class=block>{_text(block.get('text'))}</div>"
    if kind == "context":
        return f"<div class='block context'>{' '.join(_text(e) for e in block.get('elements') or [])}</div>"
    if kind == "actions":
        buttons = "".join(
            f"<span class='button {html.escape(str(e.get('style', '')))}'>{_text(e.get('text'))}</span>"
            for e in block.get("elements") or []
            if e.get("type") == "button"
        )
        return f"<div class=buttons>{buttons}</div>"
    if kind == "input":
        element = block.get("element") or {}
        return (
            f"<label>{_text(block.get('label'))}</label>"
            f"<div class=input>{html.escape(str(element.get('initial_value', '')))}&nbsp;</div>"
            f"<div class=hint>{_text(block.get('hint'))}</div>"
        )
    return ""


def _text(obj: Any) -> str:
    """A text object as Slack shows it: plain text as written; mrkdwn with *bold* and mentions."""
    if not isinstance(obj, Mapping):
        return ""
    raw = str(obj.get("text", ""))
    if obj.get("type") != "mrkdwn":
        return html.escape(raw)
    # Mentions first (only raw <@U…> is one); the rest arrives with Slack's escapes (&amp; &lt; &gt;),
    # shown as the characters they stand for
    parts = _MENTION.split(raw)  # text, user id, text, user id, ..., text
    shown = "".join(
        f"<span class=mention>@{html.escape(part)}</span>"
        if n % 2
        else html.escape(part.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&"))
        for n, part in enumerate(parts)
    )
    return _BOLD.sub(r"<b>\1</b>", shown)
