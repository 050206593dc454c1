"""What the Slack stand-in does with the messages of its channels, as Slack does: post one (with its
metadata), update one, answer a click through its response_url, list a channel's history in pages;
and the modals it was asked to open (``views.open``), kept so that one can be submitted."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# the Web API it answers
METHODS = ("chat.postMessage", "chat.update", "conversations.history", "views.open")


class Channels:
    """Every message, by ts, as its channel shows it now (the caller holds the stand-in's lock)."""

    def __init__(self, now: Callable[[], float]) -> None:
        # ts → channel, ts, text, blocks (and metadata, when posted with some)
        self.messages: dict[str, dict[str, Any]] = {}
        self.views: list[dict[str, Any]] = []  # each opened modal: id, trigger_id, view, as it was opened
        self._now = now  # what a new message's ts is made of
        self._ts = 0

    def apply(self, kind: str, path: str, body: dict[str, Any]) -> tuple[dict[str, Any], str]:
        """One call (an authorized Web API method, or a response_url answer); Slack's answer and the ts."""
        if kind == "response":  # /actions/<message ts>/<name>: the message the click was on
            ts = path.removeprefix("/actions/").rpartition("/")[0]
            if body.get("replace_original") and ts in self.messages:
                self.messages[ts].update(text=body.get("text", ""), blocks=body.get("blocks") or [])
            return {"ok": True}, ts
        if kind not in METHODS:
            return {"ok": False, "error": "unknown_method"}, ""
        if kind == "views.open":
            return self._open(body)
        channel = str(body.get("channel", ""))
        if kind == "conversations.history":
            return self._history(channel, body), ""
        if kind == "chat.update":
            ts = str(body.get("ts", ""))
            if ts not in self.messages or self.messages[ts]["channel"] != channel:
                return {"ok": False, "error": "message_not_found"}, ts
            self.messages[ts].update(text=body.get("text", ""), blocks=body.get("blocks") or [])
            return {"ok": True, "channel": channel, "ts": ts}, ts
        self._ts += 1
        ts = f"{int(self._now())}.{self._ts:06d}"
        text, blocks = body.get("text", ""), body.get("blocks") or []
        metadata = body["metadata"] if isinstance(body.get("metadata"), dict) else None
        self.messages[ts] = {"channel": channel, "ts": ts, "text": text, "blocks": blocks}
        if metadata is not None:
            self.messages[ts]["metadata"] = metadata
        return {"ok": True, "channel": channel, "ts": ts}, ts

    def _open(self, body: dict[str, Any]) -> tuple[dict[str, Any], str]:
        """views.open: keep the modal with the trigger that opened it (Slack wants both, and a modal)."""
        view, trigger = body.get("view"), body.get("trigger_id")
        if (
            not isinstance(view, dict)
            or view.get("type") != "modal"
            or not isinstance(trigger, str)
            or not trigger
        ):
            return {"ok": False, "error": "invalid_arguments"}, ""
        if any(v["trigger_id"] == trigger for v in self.views):  # a trigger opens one view, once
            return {"ok": False, "error": "exchanged_trigger_id"}, ""
        view_id = f"V{len(self.views) + 1:08d}"
        self.views.append({"id": view_id, "trigger_id": trigger, "view": view})
        return {"ok": True, "view": {"id": view_id, **view}}, view_id

    def _history(self, channel: str, body: dict[str, Any]) -> dict[str, Any]:
        """conversations.history: the channel's messages since ``oldest``, newest first, in pages."""
        oldest = float(body.get("oldest") or 0)
        limit = max(1, min(int(body.get("limit") or 100), 999))
        start = int(body.get("cursor") or 0)
        found = sorted(
            (m for m in self.messages.values() if m["channel"] == channel and float(m["ts"]) > oldest),
            key=lambda m: float(m["ts"]),
            reverse=True,
        )
        with_metadata = bool(body.get("include_all_metadata"))
        page = [
            {"type": "message", "ts": m["ts"], "text": m["text"], "blocks": m["blocks"],
             **({"metadata": m["metadata"]} if with_metadata and "metadata" in m else {})}
            for m in found[start : start + limit]
        ]  # fmt: skip
        more = start + limit < len(found)
        return {
            "ok": True,
            "messages": page,
            "has_more": more,
            "response_metadata": {"next_cursor": str(start + limit) if more else ""},
        }
