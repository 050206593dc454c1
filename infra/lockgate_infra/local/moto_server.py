"""moto's server on loopback, in a thread, keeping the AWS promises of ``local.fidelity``.

Among them, DynamoDB requests are handled one at a time (moto's conditional writes are not
atomic under threads); other services stay concurrent, so an SQS long poll never holds up a
table write.
"""

from __future__ import annotations

import logging
import urllib.request
from collections.abc import Callable, Iterable
from typing import Any, Self

from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)
from werkzeug.serving import make_server

from lockgate_infra.local.fidelity import install
from lockgate_infra.serving import ThreadedServer

log = logging.getLogger("lockgate_infra.local")

_WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class _QuietRequestHandler(MotoRequestHandler):
    """moto's handler without a log line per AWS call."""

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        log.debug("moto %s %s", self.requestline, code)


class MotoServer(ThreadedServer):
    """A moto server on ``host:port`` (port 0 picks a free one)."""

    thread_name = "moto server"

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self._host = host
        self._port = port

    def start(self) -> Self:
        """Bind and serve in a daemon thread; returns once the port is open."""
        install()
        app: _WsgiApp = DomainDispatcherApplication(create_backend_app)
        self.serve(
            make_server(self._host, self._port, app, threaded=True, request_handler=_QuietRequestHandler)
        )
        return self

    @property
    def endpoint_url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        if self._server is None:
            raise RuntimeError("the moto server is not running")
        return f"http://{self._host}:{self._server.server_port}"

    def reset(self) -> None:
        """Forget every resource: moto's state is per process, and an earlier stack may have left some."""
        url = f"{self.endpoint_url}/moto-api/reset"  # http on loopback, built here
        request = urllib.request.Request(url, method="POST")  # noqa: S310
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
            response.read()
