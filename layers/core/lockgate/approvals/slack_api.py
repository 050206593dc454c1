"""Talking to Slack: the Web API (``chat.postMessage``, ``chat.update``, ``conversations.history``,
``views.open``) with the bot token, and a click's response_url.

Both are plain HTTPS POSTs that never follow a redirect. A response_url comes inside a payload
Slack signed, and is still only used under Slack's own host (or the local stub's, when configured),
so a payload cannot make the callback post anywhere else. The bot token goes in a header, never in
a log line or an error.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

from lockgate.errors import ConfigError

# url, body, headers → the answer's body; raises OSError on a non-2xx answer (notify.send_post).
Post = Callable[[str, bytes, Mapping[str, str]], bytes]
SLACK_API_URL = "https://slack.com/api"
SLACK_RESPONSE_PREFIX = "https://hooks.slack.com/"
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
_MAX_URL_CHARS = 1_000
HISTORY_PAGE = 100  # messages per conversations.history page


class SlackApiError(Exception):
    """Slack refused a call (its ``error`` code, e.g. ``channel_not_found``); the notifier retries."""

    def __init__(self, method: str, code: str) -> None:
        super().__init__(f"{method}: {code}")
        self.code = code


def check_base(url: str) -> str:
    """An https URL, or plain http on loopback only (the local stub); the URL without a trailing /."""
    parts = urlsplit(url)
    if parts.scheme == "https" and parts.hostname:
        return url.rstrip("/")
    if parts.scheme == "http" and parts.hostname in _LOOPBACK:
        return url.rstrip("/")
    raise ConfigError(f"Slack URLs must be https:// (plain http only on loopback), got {url[:60]!r}")


class SlackWebApi:
    """The few Web API methods the notifier (and the callback, for a modal) calls, with the bot token
    resolved per call (rotation)."""

    def __init__(self, token: Callable[[], str], post: Post, base_url: str = SLACK_API_URL) -> None:
        self._token = token
        self._post = post
        self._base = check_base(base_url)

    def call(self, method: str, payload: Mapping[str, Any]) -> dict[str, Any]:
        """One Web API method with a JSON body; SlackApiError when Slack answers ``ok: false``."""
        headers = {
            "Content-Type": "application/json; charset=utf-8",
            "Authorization": f"Bearer {self._token()}",
        }
        raw = self._post(f"{self._base}/{method}", json.dumps(payload).encode(), headers)
        try:
            answer = json.loads(raw)
        except ValueError as exc:
            raise SlackApiError(method, "the answer is not JSON") from exc
        if not isinstance(answer, dict) or answer.get("ok") is not True:
            error = answer.get("error") if isinstance(answer, dict) else None
            raise SlackApiError(method, str(error or "not ok")[:80])
        return answer

    def post_message(
        self, channel: str, text: str, blocks: list[dict[str, Any]], metadata: Mapping[str, Any] | None = None
    ) -> str:
        """Post a message with blocks (``text`` is the notification's fallback); its ``ts``."""
        payload: dict[str, Any] = {"channel": channel, "text": text, "blocks": blocks, "unfurl_links": False}
        if metadata is not None:
            payload["metadata"] = dict(metadata)
        answer = self.call("chat.postMessage", payload)
        return str(answer.get("ts", ""))

    def open_view(self, trigger_id: str, view: Mapping[str, Any]) -> None:
        """Open a modal for the user whose click gave ``trigger_id`` (Slack honours it for 3 seconds)."""
        self.call("views.open", {"trigger_id": trigger_id, "view": dict(view)})

    def update_message(self, channel: str, ts: str, text: str, blocks: list[dict[str, Any]]) -> None:
        """Replace the text and blocks of the message ``ts`` (its metadata stays)."""
        self.call("chat.update", {"channel": channel, "ts": ts, "text": text, "blocks": blocks})

    def history(self, channel: str, oldest: float, cursor: str = "") -> tuple[list[dict[str, Any]], str]:
        """A page of the channel's messages since ``oldest``, with their metadata; the next page's cursor."""
        payload: dict[str, Any] = {
            "channel": channel,
            "oldest": f"{oldest:.6f}",
            "include_all_metadata": True,
            "limit": HISTORY_PAGE,
        }
        if cursor:
            payload["cursor"] = cursor
        answer = self.call("conversations.history", payload)
        messages = [m for m in answer.get("messages") or [] if isinstance(m, dict)]
        following = (answer.get("response_metadata") or {}).get("next_cursor") or ""
        return messages, str(following) if answer.get("has_more") else ""


class ResponseUrl:
    """Answers a click through its payload's response_url: replace the message, or tell only the clicker."""

    def __init__(self, post: Post, prefix: str = SLACK_RESPONSE_PREFIX) -> None:
        self._post = post
        self._prefix = check_base(prefix.rstrip("/")) + "/"

    def allows(self, url: str) -> bool:
        """Whether ``url`` is under Slack's response host (the configured prefix)."""
        return len(url) <= _MAX_URL_CHARS and url.startswith(self._prefix) and ".." not in url

    def send(self, url: str, message: Mapping[str, Any]) -> None:
        """POST ``message``; ValueError for a URL outside the prefix, OSError if Slack refuses it."""
        if not self.allows(url):
            raise ValueError("response_url is not under Slack's response host")
        self._post(url, json.dumps(message).encode(), {"Content-Type": "application/json; charset=utf-8"})


def ephemeral(text: str) -> dict[str, Any]:
    """A reply only the clicking user sees; the message itself stays as it is."""
    return {"response_type": "ephemeral", "replace_original": False, "text": text}
