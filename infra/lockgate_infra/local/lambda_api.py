"""Lambda's Invoke API for the template's functions, on loopback: one function may call another as deployed.

moto's Lambda cannot run code without Docker, and the local stack runs every function in this
process. So boto3's Lambda client (``AWS_ENDPOINT_URL_LAMBDA``) is pointed here, and
``POST /2015-03-31/functions/{FunctionName}/invocations`` runs the named function's handler, as
Lambda's Invoke does (AWS Lambda API reference, Invoke):

- ``FunctionName`` is a function's name, its ARN or a partial ARN, with an optional ``:qualifier``
  (a version or an alias, such as ``live``: every qualifier runs the one local copy);
- ``RequestResponse`` (the default) answers 200 with the handler's JSON; a handler that raises
  answers 200 too, with ``X-Amz-Function-Error: Unhandled`` and ``{"errorMessage", "errorType"}``;
- ``Event`` answers 202 and runs the handler after answering; ``DryRun`` answers 204;
- an unknown function answers 404 ``ResourceNotFoundException``; a payload that is not JSON, 400
  ``InvalidRequestContentException``; one over 6 MB, 413 ``RequestTooLargeException``.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Callable, Iterable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self
from urllib.parse import unquote, urlsplit

from lockgate_infra.local.functions import FunctionPlan
from lockgate_infra.serving import Activity, ThreadedServer

log = logging.getLogger("lockgate_infra.local")

LAMBDA_ENDPOINT = "AWS_ENDPOINT_URL_LAMBDA"  # boto3's endpoint for Lambda alone: here
MAX_PAYLOAD_BYTES = 6 * 1024 * 1024  # a synchronous invocation's request and response limit
_PATH = re.compile(r"^/2015-03-31/functions/(?P<name>[^/]+)/invocations$")

Invoke = Callable[[str, Any], Any]  # (function logical id, event) → the handler's response


class LambdaApi(ThreadedServer):
    """Serves Invoke for ``functions`` (function name → logical id) on ``127.0.0.1``."""

    thread_name = "Lambda API"

    def __init__(self, functions: Mapping[str, str], invoke: Invoke, *, host: str = "127.0.0.1") -> None:
        self.functions = dict(functions)
        self.invoke = invoke
        self.activity = Activity()
        self._address = (host, 0)

    @classmethod
    def for_plan(cls, functions: Iterable[FunctionPlan], invoke: Invoke) -> LambdaApi:
        """The Invoke API for these functions, by their names."""
        return cls({f.name: f.logical_id for f in functions}, invoke)

    def start(self) -> Self:
        """Bind a free port and serve in a daemon thread."""
        handler = type("Handler", (_InvokeHandler,), {"api": self})
        server = ThreadingHTTPServer(self._address, handler)
        server.daemon_threads = True
        self.serve(server)
        return self

    def logical_id(self, function_name: str) -> str | None:
        """The function a name, an ARN or a partial ARN (with or without a qualifier) names, or None."""
        name = function_name
        if name.startswith("arn:"):  # arn:aws:lambda:REGION:ACCOUNT:function:NAME[:QUALIFIER]
            parts = name.split(":")
            name = parts[6] if len(parts) >= 7 else ""
        elif ":function:" in name:  # ACCOUNT:function:NAME[:QUALIFIER]
            name = name.split(":function:", 1)[1].split(":", 1)[0]
        else:
            name = name.split(":", 1)[0]
        return self.functions.get(name)


class _InvokeHandler(BaseHTTPRequestHandler):
    server_version = "lockgate-local-lambda"
    api: LambdaApi

    def do_POST(self) -> None:  # noqa: N802 - BaseHTTPRequestHandler's name
        self.api.activity.count()
        matched = _PATH.match(unquote(urlsplit(self.path).path))
        if matched is None:
            return self._error(404, "UnknownOperationException", f"no operation at {self.path[:100]}")
        logical_id = self.api.logical_id(matched.group("name"))
        if logical_id is None:
            name = matched.group("name")[:140]
            return self._error(404, "ResourceNotFoundException", f"Function not found: {name}")
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_PAYLOAD_BYTES:
            self.close_connection = True
            return self._error(413, "RequestTooLargeException", "Request must be smaller than 6291456 bytes")
        raw = self.rfile.read(length) if length else b""
        try:
            event = json.loads(raw) if raw else {}
        except ValueError:
            return self._error(
                400, "InvalidRequestContentException", "Could not parse request body into json"
            )
        kind = self.headers.get("X-Amz-Invocation-Type", "RequestResponse")
        if kind == "DryRun":
            return self._send(204, b"", {})
        if kind == "Event":
            threading.Thread(target=self._run, args=(logical_id, event), daemon=True).start()
            return self._send(202, b"", {})
        ok, body = self._run(logical_id, event)
        return self._send(200, body, {} if ok else {"X-Amz-Function-Error": "Unhandled"})

    def _run(self, logical_id: str, event: Any) -> tuple[bool, bytes]:
        try:
            return True, json.dumps(self.api.invoke(logical_id, event)).encode()
        except Exception as exc:  # noqa: BLE001 - Lambda reports a handler's error in the payload
            log.exception("%s failed on an Invoke", logical_id)
            return False, json.dumps(
                {"errorMessage": str(exc)[:1000], "errorType": type(exc).__name__}
            ).encode()

    def _error(self, status: int, code: str, message: str) -> None:
        body = json.dumps({"Type": "User", "message": message}).encode()
        self._send(status, body, {"x-amzn-ErrorType": code})

    def _send(self, status: int, body: bytes, headers: Mapping[str, str]) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("X-Amz-Executed-Version", "$LATEST")
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        log.debug("lambda api: " + format, *args)


def function_names(functions: Iterable[FunctionPlan]) -> dict[str, str]:
    """Each function's name and each alias's ARN by logical id, as CloudFormation's resource list
    gives them (an AutoPublishAlias is the resource ``NAMEAlias<alias>``)."""
    names: dict[str, str] = {}
    for function in functions:
        names[function.logical_id] = function.name
        if function.alias_arn:
            names[f"{function.logical_id}Alias{function.alias}"] = function.alias_arn
    return names
