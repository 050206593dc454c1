"""StubAnthropic: the Messages API on 127.0.0.1, real HTTP, so the real SDK is what gets tested.

Serves ``POST /v1/messages`` (non-streaming), ``POST /v1/messages/count_tokens`` and Message
Batches (see ``batches``), and the same signed with SigV4 (Claude Platform on AWS) or as Bedrock's
``POST /model/{id}/invoke`` (see ``aws_wire``). Requests are
validated like the API does (see ``validation``), answered by a scripted model (see ``models``),
and billed with prompt-cache accounting (see ``accounting``). Errors use the API's shape and a
``request-id`` header, so the SDK raises its own classes.
"""

from __future__ import annotations

import itertools
import json
import threading
from http.server import BaseHTTPRequestHandler
from typing import Any

from lockgate.clock import Clock, SystemClock
from lockgate_infra.serving import Activity, Serving
from lockgate_infra.stub.accounting import PromptCache, count_input_tokens, estimate_tokens
from lockgate_infra.stub.aws_wire import (
    Invoke,
    bedrock_error,
    bedrock_invoke,
    messages_body,
    signed,
    signing_scope,
    sigv4_problem,
)
from lockgate_infra.stub.batches import BATCHES_PATH, BatchDesk
from lockgate_infra.stub.http_server import StubHttpServer, send_json
from lockgate_infra.stub.replies import LOG, STOP_REASONS, Model, NotWrittenFor, Reply, StubError
from lockgate_infra.stub.validation import constrained_reply_ok, request_problem

MESSAGES_PATH = "/v1/messages"
COUNT_TOKENS_PATH = "/v1/messages/count_tokens"
USAGE_KEYS = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


class StubAnthropic(Serving):
    """A local Messages API server; use as a context manager and point the SDK at ``base_url``."""

    def __init__(
        self,
        model: Model,
        *,
        clock: Clock | None = None,
        min_cacheable_tokens: int | None = None,  # None: each model's published minimum
        port: int = 0,
        api_key: str | None = None,
    ) -> None:
        self._model = model
        self._api_key = api_key  # when set, any other key is refused as the API would (401)
        self._cache = PromptCache(clock or SystemClock(), min_cacheable_tokens)
        self._port = port
        self._lock = threading.Lock()
        self._requests: list[Any] = []
        self._counted: list[Any] = []
        self._totals = dict.fromkeys(USAGE_KEYS, 0)
        self._ids = itertools.count(1)
        self._stopping = threading.Event()
        self._server: StubHttpServer | None = None
        self._thread: threading.Thread | None = None
        self.model_failures: list[str] = []  # exceptions raised by a scripted model (answered as 500)
        self.batches = BatchDesk()  # Message Batches: see ``batches``
        self.activity = Activity()  # every request, for `lockgate local status`
        self.wire: list[str] = []  # each model request's provider: "anthropic", "aws" or "bedrock"
        self.bedrock_ids: list[str] = []  # the model id of each Bedrock invoke path
        self.signatures: list[str] = []  # each signed request's SigV4 scope, e.g. "us-east-1/bedrock"

    def start(self) -> StubAnthropic:
        """Bind a port on 127.0.0.1 and serve in a background thread."""
        if self._server is None:
            self._server = StubHttpServer(("127.0.0.1", self._port), self)
            server = self._server
            # A short poll interval so stop() (and every test's teardown) returns quickly.
            self._thread = threading.Thread(
                target=lambda: server.serve_forever(poll_interval=0.02), name="stub-anthropic", daemon=True
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; requests still waiting out a delay are dropped unanswered."""
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None
        self._thread = None

    @property
    def base_url(self) -> str:
        """E.g. "http://127.0.0.1:PORT" (``stub_client(base_url)`` is the SDK's client for it)."""
        if self._server is None:
            raise RuntimeError("the stub server is not running; use it as a context manager or call start()")
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def running(self) -> bool:
        """Whether its server thread is serving."""
        return self._thread is not None and self._thread.is_alive()

    @property
    def requests(self) -> list[Any]:
        """Every JSON body received at /v1/messages, in order (a snapshot)."""
        with self._lock:
            return list(self._requests)

    @property
    def calls(self) -> int:
        """How many /v1/messages requests arrived."""
        with self._lock:
            return len(self._requests)

    @property
    def count_requests(self) -> list[Any]:
        """Every JSON body received at /v1/messages/count_tokens, in order (a snapshot)."""
        with self._lock:
            return list(self._counted)

    @property
    def usage_totals(self) -> dict[str, int]:
        """Input, output, cache-write and cache-read tokens summed over every successful reply."""
        with self._lock:
            return dict(self._totals)

    def set_model(self, model: Model) -> None:
        """Answer later requests with another scripted model."""
        with self._lock:
            self._model = model

    def handle(self, handler: BaseHTTPRequestHandler) -> None:
        """Answer one HTTP request (called on the server's worker thread)."""
        with self._lock:
            number = next(self._ids)
        self.activity.count()
        request_id = f"req_stub_{number:012d}"
        path = handler.path.split("?", 1)[0]
        raw = handler.rfile.read(int(handler.headers.get("content-length") or 0))
        invoke = bedrock_invoke(path) if handler.command == "POST" else None
        if invoke is not None or signed(handler.headers):
            problem = sigv4_problem(handler.headers) or (
                None
                if invoke or handler.headers.get("anthropic-workspace-id")
                else "anthropic-workspace-id: required"
            )
            if problem:
                return self._error(handler, request_id, StubError(403, "permission_error", problem), invoke)
            with self._lock:
                self.signatures.append(signing_scope(handler.headers))
        if invoke is not None:
            return self._invoke(handler, request_id, f"msg_stub_{number:012d}", invoke, raw)
        batch = path == BATCHES_PATH or path.startswith(BATCHES_PATH + "/")
        if not batch and (handler.command != "POST" or path not in (MESSAGES_PATH, COUNT_TOKENS_PATH)):
            return self._error(handler, request_id, StubError(404, "not_found_error", f"Not found: {path}"))
        if not (handler.headers.get("x-api-key") or handler.headers.get("authorization")):
            return self._error(
                handler, request_id, StubError(401, "authentication_error", "x-api-key header is required")
            )
        sent = handler.headers.get("x-api-key") or handler.headers.get("authorization", "").removeprefix(
            "Bearer "
        )
        if self._api_key is not None and sent != self._api_key and not signed(handler.headers):
            return self._error(
                handler, request_id, StubError(401, "authentication_error", "invalid x-api-key")
            )
        try:
            body = json.loads(raw or b"null")
        except ValueError:
            return self._error(
                handler, request_id, StubError(400, "invalid_request_error", "Invalid JSON body")
            )
        if batch:
            return self._batch(handler, request_id, path, body)
        if path == COUNT_TOKENS_PATH:
            with self._lock:
                self._counted.append(body)
            problem = request_problem(body, count_tokens=True)
            if problem:
                return self._error(handler, request_id, StubError(400, "invalid_request_error", problem))
            return send_json(handler, request_id, 200, {"input_tokens": count_input_tokens(body)})
        with self._lock:
            self._requests.append(body)
            self.wire.append("aws" if signed(handler.headers) else "anthropic")
            model = self._model
        problem = request_problem(body)
        if problem:
            return self._error(handler, request_id, StubError(400, "invalid_request_error", problem))
        return self._answer(handler, request_id, f"msg_stub_{number:012d}", body, model)

    def _answer(
        self,
        handler: BaseHTTPRequestHandler,
        request_id: str,
        message_id: str,
        body: dict[str, Any],
        model: Model,
    ) -> None:
        message = self._message(message_id, body, model)
        if isinstance(message, StubError):
            return self._error(handler, request_id, message)
        return send_json(handler, request_id, 200, message)

    def _invoke(
        self, handler: BaseHTTPRequestHandler, request_id: str, message_id: str, invoke: Invoke, raw: bytes
    ) -> None:
        """Bedrock's InvokeModel: the Messages body with its model from the path, AWS-shaped errors."""
        try:
            body = messages_body(invoke, json.loads(raw or b"null"))
        except ValueError:
            body = StubError(400, "invalid_request_error", "Invalid JSON body")
        if isinstance(body, StubError):
            return self._error(handler, request_id, body, invoke)
        with self._lock:
            self._requests.append(body)
            self.wire.append("bedrock")
            self.bedrock_ids.append(invoke.model)
            model = self._model
        problem = request_problem(body)
        message = (
            StubError(400, "invalid_request_error", problem)
            if problem
            else self._message(message_id, body, model)
        )
        if isinstance(message, StubError):
            return self._error(handler, request_id, message, invoke)
        return send_json(handler, request_id, 200, message)

    def _batch(self, handler: BaseHTTPRequestHandler, request_id: str, path: str, body: Any) -> None:
        def answer(params: dict[str, Any], custom_id: str) -> dict[str, Any] | StubError:
            with self._lock:
                model = self._model
            return self._message(f"msg_stub_batch_{custom_id}", params, model)

        routed = self.batches.route(handler.command, path, body, self.base_url, answer)
        if routed is None:
            return self._error(handler, request_id, StubError(404, "not_found_error", f"Not found: {path}"))
        if isinstance(routed, StubError):
            return self._error(handler, request_id, routed)
        status, payload = routed
        return send_json(
            handler, request_id, status, payload.encode() if isinstance(payload, str) else payload
        )

    def _message(self, message_id: str, body: dict[str, Any], model: Model) -> dict[str, Any] | StubError:
        """The model's reply to one request as a Message, billed; or the error to answer with."""
        try:
            outcome = model(body)
        except Exception as exc:  # noqa: BLE001 - a broken scripted model is reported to the client as a 500
            failure = f"{type(exc).__name__}: {exc}"
            with self._lock:
                self.model_failures.append(failure)
            outcome = StubError(500, "api_error", f"stub model failed: {failure}")
        if isinstance(outcome, StubError):
            return outcome
        if isinstance(outcome, NotWrittenFor):
            LOG.warning(
                "offline model asked to run a task it was not written for: %s", outcome.content[0]["text"]
            )
        if not isinstance(outcome, Reply) or outcome.stop_reason not in STOP_REASONS:
            return StubError(500, "api_error", "stub model gave no valid reply")
        if not constrained_reply_ok(body, outcome):
            return StubError(
                500, "api_error", "stub model's reply is not the JSON that output_config asks for"
            )
        usage = self._cache.account(body).as_usage(max(1, estimate_tokens(outcome.content)))
        with self._lock:
            for key in USAGE_KEYS:
                self._totals[key] += int(usage[key])
        return {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": outcome.content,
            "stop_reason": outcome.stop_reason,
            "stop_sequence": None,
            "usage": usage,
        }

    def _error(
        self, handler: BaseHTTPRequestHandler, request_id: str, error: StubError, invoke: Invoke | None = None
    ) -> None:
        if error.delay > 0 and self._stopping.wait(error.delay):
            handler.close_connection = True
            return None  # shutting down: the client has long given up
        if invoke is not None:
            return send_json(handler, request_id, error.status, *bedrock_error(error))
        body = {
            "type": "error",
            "error": {"type": error.type, "message": error.message},
            "request_id": request_id,
        }
        return send_json(handler, request_id, error.status, body, error.headers)
