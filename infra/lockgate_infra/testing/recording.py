"""``RecordingApi``: a stand-in for an outside HTTP API with side effects, keyed by the idempotency key.

A tool that calls an API outside AWS (payments, a CRM, GitHub) passes the ledger's key for the call
(``ctx.idempotency_key``) as the API's ``Idempotency-Key`` header. This stand-in plays such an API
on 127.0.0.1, the way the careful ones behave:

- each request that changes something (POST, PUT, PATCH, DELETE) must carry the key (400 without);
- the first request with a key takes effect: it is recorded, with what it answered;
- a repeat with the same key and the same request gets the first answer again (header
  ``Idempotent-Replayed: true``), and nothing happens twice; the same key with another request is
  refused (409);
- ``GET PATH?field=value`` lists what was done at ``PATH`` whose request had every such field
  (``metadata[key]=...`` included): what a tool's reconcile hook asks to find a call by its key;
- ``lose_answer()`` lets the next change take effect and then closes the connection without an
  answer: the caller cannot know, which is what the ledger's UNKNOWN and reconcile hooks are for.

Use it in tests (the ``lockgate_environment`` fixture points your adapter at it) and on
``lockgate local --stand-in VARIABLE=package.module:factory``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from lockgate_infra.serving import Activity, LoopbackServer

CHANGES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
KEY_HEADER = "Idempotency-Key"


@dataclass(frozen=True)
class RecordedCall:
    """One request that took effect at the stand-in, and what it answered."""

    key: str
    """Its ``Idempotency-Key``: the ledger's key for the tool call that sent it."""

    method: str
    """``POST``, ``PUT``, ``PATCH`` or ``DELETE``."""

    path: str
    """The request's path, without its query (e.g. ``/v1/refunds``)."""

    fields: Mapping[str, str]
    """The request's fields: a form's as sent, a JSON object's flattened (``metadata[order]``)."""

    answer: Any
    """The JSON it answered (and answers again to a repeat of the key)."""

    repeats: int = 0
    """How many later requests came with the same key and were answered without a second effect."""

    answered: bool = True
    """False when its answer was lost (``lose_answer``): it took effect, the caller never heard."""


Answer = Callable[[RecordedCall], Any]
"""Builds the JSON answer to a new call from the call (its ``answer`` is still None)."""


class RecordingApi(LoopbackServer):
    """An outside HTTP API with side effects, played on 127.0.0.1 and recording each call by its key.

    ``answers`` maps ``"METHOD /path"`` to a function building the JSON answer of a new call; a
    path without an entry answers ``{"id": "rec_<n>", **fields}``. ``name`` says what it plays (in
    ``lockgate local``'s banner and console); ``sink`` gets one line per call; ``port`` 0 picks one.
    Use as a context manager (or ``start()``/``stop()``); ``url`` is where it listens.
    """

    def __init__(
        self,
        answers: Mapping[str, Answer] | None = None,
        *,
        name: str = "outside API",
        port: int = 0,
        sink: Callable[[str], None] | None = None,
    ) -> None:
        self.name = name
        """What it plays, e.g. "payments API (Stripe-like)"."""
        self.activity = Activity()
        """Every request, for ``lockgate local status``."""
        self.sink = sink
        """Where a line per call goes (``lockgate local`` sets its console); None: nowhere."""
        self._answers = dict(answers or {})
        self._calls: dict[str, RecordedCall] = {}  # by key, in the order they took effect
        self._lose = 0
        self._lock = threading.Lock()
        super().__init__(_handler(self), port, "recording-api")

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``: the API's base URL for your adapter (its ``start()`` serves it,
        ``stop()`` ends it; or use it as a context manager)."""
        return super().url

    # -- what a test reads and does -------------------------------------------------------------

    def calls(self, path: str | None = None) -> list[RecordedCall]:
        """Every call that took effect (at ``path``, when given), in the order they did."""
        with self._lock:
            return [c for c in self._calls.values() if path is None or c.path == path]

    def recorded(self, key: str) -> RecordedCall | None:
        """The call that took effect with this idempotency key, or None."""
        with self._lock:
            return self._calls.get(key)

    def lose_answer(self, times: int = 1) -> None:
        """The next ``times`` new calls take effect, then their connection closes with no answer."""
        with self._lock:
            self._lose += times

    # -- serving --------------------------------------------------------------------------------

    def change(self, method: str, path: str, key: str, fields: Mapping[str, str]) -> tuple[int, Any, bool]:
        """(status, JSON answer, replayed) for one change; status 0: take effect, send no answer."""
        self.activity.count()
        if not key:
            return 400, {"error": f"a {method} must carry an {KEY_HEADER} header"}, False
        with self._lock:
            earlier = self._calls.get(key)
            if earlier is not None:
                if (earlier.method, earlier.path, dict(earlier.fields)) != (method, path, dict(fields)):
                    message = f"{KEY_HEADER} {key} was first used with another request"
                    return 409, {"error": message}, False
                self._calls[key] = replace(earlier, repeats=earlier.repeats + 1)
                return 200, earlier.answer, True
            call = RecordedCall(key, method, path, dict(fields), None)
            build = self._answers.get(f"{method} {path}")
            answer = build(call) if build is not None else {"id": f"rec_{len(self._calls) + 1}", **fields}
            lost = self._lose > 0
            self._lose -= lost
            self._calls[key] = replace(call, answer=answer, answered=not lost)
        self._say(f"{method} {path} [{key}]" + (": answer lost" if lost else ""))
        return (0 if lost else 200), answer, False

    def listing(self, path: str, query: Mapping[str, str]) -> dict[str, Any]:
        """What was done at ``path`` whose request had every field of ``query``: ``{"data": [...]}``."""
        self.activity.count()
        found = [
            c.answer
            for c in self.calls(path)
            if all(c.fields.get(name) == value for name, value in query.items())
        ]
        return {"object": "list", "data": found, "has_more": False}

    def _say(self, line: str) -> None:
        if self.sink is not None:
            self.sink(f"{self.name}: {line}")


def flat_fields(value: Any, prefix: str = "") -> Iterator[tuple[str, str]]:
    """A JSON object's fields as a form names them: ``{"metadata": {"k": "v"}}`` is ``metadata[k]``."""
    if isinstance(value, Mapping):
        for name, inner in value.items():
            yield from flat_fields(inner, f"{prefix}[{name}]" if prefix else str(name))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from flat_fields(inner, f"{prefix}[{index}]")
    else:
        yield prefix, "" if value is None else json.dumps(value) if isinstance(value, bool) else str(value)


def _fields(body: bytes, content_type: str) -> dict[str, str]:
    text = body.decode("utf-8", "replace")
    if "json" in content_type.lower() or text.lstrip()[:1] == "{":
        return dict(flat_fields(json.loads(text or "{}")))
    return dict(parse_qsl(text, keep_blank_values=True))


def _handler(api: RecordingApi) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _change(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length) if length else b""
            where = urlsplit(self.path)
            try:
                fields = _fields(body, self.headers.get("content-type") or "")
            except ValueError:
                self._send(400, {"error": "the body is neither a form nor a JSON object"})
                return
            status, answer, replayed = api.change(
                self.command, where.path, (self.headers.get(KEY_HEADER) or "").strip(), fields
            )
            if status == 0:  # it took effect; the caller never hears (a timeout, a dropped line)
                self.close_connection = True
                self.connection.close()
                return
            self._send(status, answer, {"Idempotent-Replayed": "true"} if replayed else {})

        do_POST = do_PUT = do_PATCH = do_DELETE = _change  # noqa: N815 - http.server dispatches to these

        def do_GET(self) -> None:  # noqa: N802 - the name http.server dispatches to
            where = urlsplit(self.path)
            self._send(200, api.listing(where.path, dict(parse_qsl(where.query, keep_blank_values=True))))

        def _send(self, status: int, payload: Any, headers: Mapping[str, str] | None = None) -> None:
            data = json.dumps(payload).encode()
            self.close_connection = True
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.send_header("connection", "close")
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's signature
            """Quiet: ``sink`` says what matters."""

    return Handler
