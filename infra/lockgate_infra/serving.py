"""The tools' loopback servers and stacks: ``with`` starts one and always stops it."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Self


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


class LoopbackServer(Serving):
    """An HTTP server on 127.0.0.1 (port 0 picks a free one), served from a daemon thread."""

    def __init__(self, handler: type[BaseHTTPRequestHandler], port: int = 0, name: str = "loopback") -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", port), handler)
        self._thread: threading.Thread | None = None
        self._name = name

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def running(self) -> bool:
        """Whether its server thread is serving."""
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> Self:
        """Serve in a daemon thread."""
        server = self._server  # a short poll interval: stop() returns quickly
        self._thread = threading.Thread(
            target=lambda: server.serve_forever(poll_interval=0.02), name=self._name, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(5)


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
