"""moto's server on loopback, in a thread, keeping the AWS promises of ``local.fidelity``.

Among them, DynamoDB requests are handled one at a time (moto's conditional writes are not
atomic under threads); other services stay concurrent, so an SQS long poll never holds up a
table write.
"""

from __future__ import annotations

import logging
import threading
import urllib.request
from collections.abc import Callable, Iterable
from typing import Any, Self

from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)
from werkzeug.serving import BaseWSGIServer, make_server

from lockgate_infra.local.fidelity import install
from lockgate_infra.serving import Serving

log = logging.getLogger("lockgate_infra.local")

_WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class _QuietRequestHandler(MotoRequestHandler):
    """moto's handler without a log line per AWS call."""

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        log.debug("moto %s %s", self.requestline, code)


class MotoServer(Serving):
    """A moto server on ``host:port`` (port 0 picks a free one)."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self._host = host
        self._port = port
        self._server: BaseWSGIServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> Self:
        """Bind and serve in a daemon thread; returns once the port is open."""
        install()
        app: _WsgiApp = DomainDispatcherApplication(create_backend_app)
        self._server = make_server(
            self._host, self._port, app, threaded=True, request_handler=_QuietRequestHandler
        )
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="moto-server", daemon=True
        )
        self._thread.start()
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

    def stop(self) -> None:
        """Stop serving and wait for the thread."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None
        self._thread = None
