"""The tools' loopback servers and stacks: ``with`` starts one and always stops it."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self


class Serving:
    """Something that runs between ``start()`` and ``stop()``; as a context manager, exactly then."""

    def start(self) -> Self:
        """Start serving; returns itself."""
        raise NotImplementedError

    def stop(self) -> None:
        """Stop serving and release what it held."""
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


class ThreadedServer(Serving):
    """A loopback server answering from a daemon thread (the gateway, the Lambda API, moto).

    A subclass's ``start`` makes its server (anything with ``serve_forever``, ``shutdown``,
    ``server_close`` and ``server_address``) and hands it to ``serve``; ``stop`` and ``url`` are here.
    """

    thread_name = "server"
    _server: Any = None
    _thread: threading.Thread | None = None

    def serve(self, server: Any) -> None:
        """Serve ``server`` in a daemon thread until ``stop``."""
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, name=self.thread_name, daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        if self._server is None:
            raise RuntimeError(f"the {self.thread_name} is not running")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def stop(self) -> None:
        """Stop serving and wait for the thread."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server, self._thread = None, None


class LoopbackServer(ThreadedServer):
    """An HTTP server bound on 127.0.0.1 when made (port 0 picks a free one), so its URL is known before
    ``start``; served from a daemon thread (the Slack stand-in, an outside API's recording stand-in)."""

    def __init__(self, handler: type[BaseHTTPRequestHandler], port: int = 0, name: str = "loopback") -> None:
        self._bound = ThreadingHTTPServer(("127.0.0.1", port), handler)
        self._server = self._bound  # its URL, before and while it serves
        self.thread_name = name

    @property
    def running(self) -> bool:
        """Whether its server thread is serving."""
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> Self:
        """Serve in a daemon thread."""
        self.serve(self._bound)
        return self


class Activity:
    """How many requests a loopback server answered and when the last came (``lockgate local status``)."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self.handled = 0
        self.last: float | None = None  # epoch seconds

    def count(self) -> None:
        """One more request, now."""
        with self._lock:
            self.handled += 1
            self.last = self._clock()
