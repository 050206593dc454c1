"""A stand-in for Slack on loopback: the Web API's chat.postMessage (with message metadata),
chat.update, conversations.history and views.open, and response_urls.

It records every call (method, JSON body, whether the bot token was right) and keeps each message
as the channel would show it now, so tests and the local stack can read what Lockgate sent: the
console shows each with its buttons, ``GET /messages`` and ``GET /calls`` answer other processes
(``lockgate local slack``), and ``signed_click`` makes the interaction request Slack would send when
someone clicks a button, signed with the app's signing secret, from a workspace (``team``). Each
modal opened is kept (``GET /views``); ``submission_payload`` is what Slack sends when someone
submits one with values typed in its fields.
``lose_answer`` makes the next call of a method take effect and then fail, as when Slack posted a
message and its answer never came back.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from lockgate.config import SourceConfig, load_config
from lockgate.webhooks.signing import sign
from lockgate_infra.local.devsecrets import SLACK_DEV_SECRETS
from lockgate_infra.local.slack_channels import METHODS, Channels
from lockgate_infra.local.slack_view import call_lines
from lockgate_infra.serving import Activity, LoopbackServer

_MAX_BODY = 1_048_576
LOCAL_TEAM = "T0LOCAL"  # the workspace a click comes from unless told otherwise


@dataclass(frozen=True)
class SlackCall:
    """One request the stub received."""

    kind: str  # "chat.postMessage", "chat.update", "conversations.history", "views.open" or "response"
    body: dict[str, Any]
    authorized: bool  # the bot token was the expected one (always True for response_url posts)
    path: str


class SlackStub(LoopbackServer):
    """Slack's Web API and response_urls on ``127.0.0.1`` (port 0 picks a free one)."""

    def __init__(
        self,
        bot_token: str,
        port: int = 0,
        sink: Callable[[str], None] | None = None,
        now: Callable[[], float] = time.time,
    ) -> None:
        self.bot_token = bot_token
        self.calls: list[SlackCall] = []
        self.channels = Channels(now)
        self.messages = self.channels.messages  # ts → the message as the channel shows it now
        self._sink = sink  # the console's lines for each call
        self._lose: set[str] = set()  # methods whose next answer is lost
        self._lock = threading.Lock()
        self.activity = Activity()  # every request, for `lockgate local status`
        super().__init__(_handler(self), port, "slack-stub")

    @property
    def api_url(self) -> str:
        """Where the Web API lives (``SLACK_API_URL``)."""
        return f"{self.url}/api"

    @property
    def response_prefix(self) -> str:
        """Under which response_urls live (``SLACK_RESPONSE_URL_PREFIX``)."""
        return f"{self.url}/actions/"

    def response_url(self, name: str, message_ts: str | None = None) -> str:
        """A response_url for one click, as Slack puts one in each interaction payload.

        With ``message_ts``, an answer that replaces the original replaces that message here.
        """
        return (
            f"{self.response_prefix}{name}"
            if message_ts is None
            else f"{self.response_prefix}{message_ts}/{name}"
        )

    def lose_answer(self, method: str) -> None:
        """The next ``method`` call takes effect, then answers 500: its caller never learns the outcome."""
        with self._lock:
            self._lose.add(method)

    def answer_lost(self, kind: str) -> bool:
        """Whether this call's answer is to be lost (once per ``lose_answer``)."""
        with self._lock:
            lost = kind in self._lose
            self._lose.discard(kind)
        return lost

    def of_kind(self, kind: str) -> list[SlackCall]:
        """The calls of one kind, in the order they came."""
        with self._lock:
            return [c for c in self.calls if c.kind == kind]

    def record(self, path: str, body: dict[str, Any], authorization: str) -> dict[str, Any]:
        """Keep one call; the answer Slack would give."""
        self.activity.count()
        kind = "response" if path.startswith("/actions/") else path.removeprefix("/api/")
        authorized = kind == "response" or authorization == f"Bearer {self.bot_token}"
        with self._lock:
            self.calls.append(SlackCall(kind, body, authorized, path))
            answer, ts = self._apply(kind, path, body, authorized)
        if self._sink is not None:
            for line in call_lines(kind, body, answer, ts):
                self._sink(line)
        return answer

    def _apply(
        self, kind: str, path: str, body: dict[str, Any], authorized: bool
    ) -> tuple[dict[str, Any], str]:
        """What the call does to the channel (under the lock); Slack's answer and the message's ts."""
        if kind != "response" and kind in METHODS and not authorized:
            return {"ok": False, "error": "invalid_auth"}, ""
        return self.channels.apply(kind, path, body)

    def snapshot(self, what: str) -> list[dict[str, Any]] | None:
        """``GET /messages`` (the channel now), ``GET /views`` (each modal opened) or ``GET /calls`` (every
        call), as JSON-ready lists."""
        with self._lock:
            if what == "/messages":
                return [dict(m) for m in self.messages.values()]
            if what == "/views":
                return [dict(v) for v in self.channels.views]
            if what == "/calls":
                return [{"kind": c.kind, "path": c.path, "authorized": c.authorized, "body": c.body}
                        for c in self.calls]  # fmt: skip
        return None


def _handler(stub: SlackStub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(min(length, _MAX_BODY))
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {"unparsed": raw.decode("utf-8", "replace")}
            # Slack answers 200 with ok: false for API errors
            answer = stub.record(self.path, body, self.headers.get("authorization", ""))
            lost = stub.answer_lost(self.path.removeprefix("/api/"))
            self._send(500 if lost else 200, {"ok": False, "error": "answer_lost"} if lost else answer)

        def do_GET(self) -> None:
            found = stub.snapshot(self.path)
            if found is None:
                self._send(404, {"ok": False, "error": "not_found"})
            else:
                self._send(200, found)

        def _send(self, status: int, answer: Any) -> None:
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
            return

    return Handler


def click_payload(
    user: str,
    action_id: str,
    value: str,
    response_url: str,
    *,
    message_ts: str = "1.000001",
    channel: str = "C0LOCAL",
    team: str = LOCAL_TEAM,
    enterprise: str | None = None,
    trigger_id: str = "1.2.local",
) -> dict[str, Any]:
    """A block_actions payload as Slack sends it for a button click (the fields Lockgate reads and more)."""
    return {
        "type": "block_actions",
        "user": {"id": user, "username": user.lower(), "team_id": team},
        "api_app_id": "A0LOCAL",
        "team": {"id": team, "domain": team.lower()},
        "enterprise": None if enterprise is None else {"id": enterprise, "name": enterprise.lower()},
        "is_enterprise_install": False,
        "container": {"type": "message", "message_ts": message_ts, "channel_id": channel},
        "trigger_id": trigger_id,
        "response_url": response_url,
        "actions": [
            {
                "type": "button",
                "action_id": action_id,
                "block_id": "lockgate_decide",
                "value": value,
                "action_ts": f"{time.time():.6f}",
            },
        ],  # fmt: skip
    }


def signed_click(
    payload: dict[str, Any], signing_secret: str, now: int | None = None
) -> tuple[bytes, dict[str, str]]:
    """The form-encoded body and signed headers of Slack's interaction request for ``payload``."""
    body = urlencode({"payload": json.dumps(payload)}).encode()
    source = SourceConfig(name="slack-approvals", scheme="slack", secrets=("-",))
    return body, sign(source, signing_secret, body, int(time.time() if now is None else now))


@contextmanager
def local_slack(
    config_path: str | Path, sink: Callable[[str], None] | None = None
) -> Iterator[SlackStub | None]:
    """With ``[approvals.slack]`` configured, a stub for as long as the stack runs (None when Slack
    approvals are off)."""
    if load_config(config_path).approvals.slack is None:
        yield None
        return
    with SlackStub(SLACK_DEV_SECRETS["bot_token"], sink=sink) as stub:
        yield stub


def slack_environment(stub: SlackStub | None) -> dict[str, str]:
    """What points the functions at the stub (nothing without one)."""
    if stub is None:
        return {}
    return {"SLACK_API_URL": stub.api_url, "SLACK_RESPONSE_URL_PREFIX": stub.response_prefix}
