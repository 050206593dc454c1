"""A stand-in for Slack on loopback: the Web API's chat.postMessage / chat.update and response_urls.

It records every call (method, JSON body, whether the bot token was right) so tests and the local
stack can read the Slack messages Lockgate sent, and ``signed_click`` makes the interaction request
Slack would send when someone clicks a button, signed with the app's signing secret.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self
from urllib.parse import urlencode

from lockgate.config import SourceConfig, load_config
from lockgate.webhooks.signing import sign
from lockgate_infra.local.devsecrets import SLACK_DEV_SECRETS
from lockgate_infra.serving import Serving

_MAX_BODY = 1_048_576


@dataclass(frozen=True)
class SlackCall:
    """One request the stub received."""

    kind: str  # "chat.postMessage", "chat.update" or "response"
    body: dict[str, Any]
    authorized: bool  # the bot token was the expected one (always True for response_url posts)
    path: str


class SlackStub(Serving):
    """Slack's Web API and response_urls on ``127.0.0.1`` (port 0 picks a free one)."""

    def __init__(self, bot_token: str, port: int = 0, sink: Callable[[str], None] | None = None) -> None:
        self.bot_token = bot_token
        self.calls: list[SlackCall] = []
        self._sink = sink  # one line per message, for the local stack's console
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", port), _handler(self))
        self._thread: threading.Thread | None = None
        self._ts = 0

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def api_url(self) -> str:
        """Where the Web API lives (``SLACK_API_URL``)."""
        return f"{self.url}/api"

    @property
    def response_prefix(self) -> str:
        """Under which response_urls live (``SLACK_RESPONSE_URL_PREFIX``)."""
        return f"{self.url}/actions/"

    def response_url(self, name: str) -> str:
        """A response_url for one click, as Slack puts one in each interaction payload."""
        return f"{self.response_prefix}{name}"

    def start(self) -> Self:
        """Serve in a daemon thread."""
        server = self._server  # a short poll interval: stop() returns quickly
        self._thread = threading.Thread(
            target=lambda: server.serve_forever(poll_interval=0.02), name="slack-stub", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(5)

    def of_kind(self, kind: str) -> list[SlackCall]:
        """The calls of one kind, in the order they came."""
        with self._lock:
            return [c for c in self.calls if c.kind == kind]

    def record(self, path: str, body: dict[str, Any], authorization: str) -> dict[str, Any]:
        """Keep one call; the answer Slack would give."""
        kind = "response" if path.startswith("/actions/") else path.removeprefix("/api/")
        authorized = kind == "response" or authorization == f"Bearer {self.bot_token}"
        with self._lock:
            self.calls.append(SlackCall(kind, body, authorized, path))
            self._ts += 1
            ts = f"{int(time.time())}.{self._ts:06d}"
        if self._sink is not None:
            self._sink(f"[slack] {kind}: {str(body.get('text', ''))[:200]}")
        if kind == "response":
            return {"ok": True}
        if kind not in ("chat.postMessage", "chat.update"):
            return {"ok": False, "error": "unknown_method"}
        if not authorized:
            return {"ok": False, "error": "invalid_auth"}
        return {"ok": True, "channel": body.get("channel", ""), "ts": body.get("ts") or ts}


def _handler(stub: SlackStub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(min(length, _MAX_BODY))
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {"unparsed": raw.decode("utf-8", "replace")}
            answer = stub.record(self.path, body, self.headers.get("authorization", ""))
            data = json.dumps(answer).encode()
            self.send_response(200)  # Slack answers 200 with ok: false for API errors
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
            return

    return Handler


def click_payload(user: str, action_id: str, value: str, response_url: str) -> dict[str, Any]:
    """A block_actions payload as Slack sends it for a button click (the fields Lockgate reads and more)."""
    return {
        "type": "block_actions",
        "user": {"id": user, "username": user.lower(), "team_id": "T0LOCAL"},
        "api_app_id": "A0LOCAL",
        "team": {"id": "T0LOCAL", "domain": "local"},
        "container": {"type": "message", "message_ts": "1.000001", "channel_id": "C0LOCAL"},
        "trigger_id": "1.2.local",
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
) -> Iterator[dict[str, str]]:
    """With ``[approvals.slack]`` configured: a stub for as long as the stack runs, and the environment
    that points the functions at it (nothing when Slack approvals are off)."""
    if load_config(config_path).approvals.slack is None:
        yield {}
        return
    with SlackStub(SLACK_DEV_SECRETS["bot_token"], sink=sink) as stub:
        yield {"SLACK_API_URL": stub.api_url, "SLACK_RESPONSE_URL_PREFIX": stub.response_prefix}
