"""``McpExample``: the example ticketing MCP server on 127.0.0.1, in a background thread (uvicorn).

The port is bound before the server starts (port 0: the OS picks one), so ``url`` is known at
once and stays the same across ``down``/``up`` and ``flap``. State (the ``Desk``), armed faults and
changed definitions live in this object, not in the SDK's app, so they survive a restart; the
SDK's app is built anew each time (its session manager runs once per app), which is also how a
restart loses the handshake-era sessions.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import uvicorn
from mcp.types import ToolAnnotations

from lockgate_infra.mcp_example.control import control
from lockgate_infra.mcp_example.desk import Desk
from lockgate_infra.mcp_example.faults import Faults
from lockgate_infra.mcp_example.front import Auth, Front, Seen
from lockgate_infra.mcp_example.tools import Change, build_mcp_server, replace, tool_specs
from lockgate_infra.serving import Activity, Serving

EXAMPLE_TOKEN = "example-mcp-token"  # noqa: S105 - a fixed token for a loopback-only example server


class McpExample(Serving):
    """The example MCP server; ``with McpExample() as server:`` serves at ``server.url``.

    It is also a stand-in ``lockgate local`` can run (an outside API, as ``--stand-in`` takes):
    ``name`` says what it plays in the banner and status, ``sink`` gets a line per ``tools/call``
    (the tool and its idempotency key; never the credential).
    """

    kind = "mcp"  # its rows in `lockgate local status`

    def __init__(
        self,
        *,
        name: str = "example MCP server",
        sink: Callable[[str], None] | None = None,
        port: int = 0,
        token: str | None = EXAMPLE_TOKEN,
        forbidden_token: str | None = None,
        auth_header: str = "Authorization",
        key_header: str = "Idempotency-Key",
        desk: Desk | None = None,
        json_response: bool = False,
    ) -> None:
        bearer = auth_header.lower() == "authorization"
        as_header = (lambda t: f"Bearer {t}") if bearer else (lambda t: t)
        self.auth = Auth(
            auth_header,
            (as_header(token),) if token else (),
            (as_header(forbidden_token),) if forbidden_token else (),
        )
        self.name, self.sink = name, sink
        self.desk = desk or Desk()
        self.faults = Faults()
        self.seen: list[Seen] = []  # every request received, in order (never its credential)
        self.activity = Activity()
        self.changes: dict[str, Change] = {}
        self._specs = tool_specs(self.desk, key_header)
        self._key_header, self._json_response = key_header, json_response
        self._port = port
        self._lock = threading.RLock()
        self._mcp: Any = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None

    @property
    def port(self) -> int:
        """The port (fixed once first started)."""
        return self._port

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT/mcp``."""
        return f"http://127.0.0.1:{self._port}/mcp"

    @property
    def running(self) -> bool:
        """Whether its server thread is serving."""
        thread = self._thread
        return thread is not None and thread.is_alive()

    def start(self) -> McpExample:
        """Listen and serve in a daemon thread; returns once the server accepts connections."""
        with self._lock:
            if self._server is not None:
                return self
            # IPPROTO_TCP: asyncio sets TCP_NODELAY only on sockets made with it (else ~40 ms a reply).
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("127.0.0.1", self._port))
            self._port, self._socket = sock.getsockname()[1], sock
            self._mcp = build_mcp_server(self._specs, self.changes)
            app = Front(
                self._mcp.streamable_http_app(json_response=self._json_response),
                auth=self.auth,
                faults=self.faults,
                seen=self.seen,
                key_header=self._key_header,
                control=lambda method, path, body: control(self, method, path, body),
                activity=self.activity,
                heard=self._heard,
            )
            config = uvicorn.Config(
                app, log_config=None, lifespan="on", timeout_graceful_shutdown=1, access_log=False
            )
            self._server = uvicorn.Server(config)
            self._thread = threading.Thread(
                target=self._server.run, kwargs={"sockets": [sock]}, name="mcp-example", daemon=True
            )
            self._thread.start()
            self._wait_started(self._server, self._thread)
            return self

    def stop(self) -> None:
        """Stop serving; the state stays (``start`` serves it again on the same port)."""
        with self._lock:
            if self._server is not None:
                self._server.should_exit = True
            if self._thread is not None:
                self._thread.join(timeout=10)
            if self._socket is not None:
                self._socket.close()
            self._server, self._thread, self._socket, self._mcp = None, None, None, None

    def down(self) -> None:
        """Refuse connections (nothing listens) until ``up``."""
        self.stop()

    def up(self) -> None:
        """Listen again after ``down``, on the same port."""
        self.start()

    def flap(self, down_for: float) -> threading.Thread:
        """Refuse connections for ``down_for`` seconds, then serve again (returns the thread that will)."""
        self.down()

        def back_up() -> None:
            time.sleep(down_for)
            self.up()

        thread = threading.Thread(target=back_up, name="mcp-example-flap", daemon=True)
        thread.start()
        return thread

    def change_tool(
        self,
        name: str,
        *,
        description: str | None = None,
        new_argument: str | None = None,
        annotations: ToolAnnotations | None = None,
    ) -> None:
        """Change ``name``'s definition now (and after restarts), as a server changed after review."""
        with self._lock:
            self.changes[name] = Change(description, new_argument, annotations)
            if self._mcp is not None:
                replace(self._mcp, self._specs[name], self.changes[name])

    def reset(self) -> None:
        """As new: sample tickets, no effects, no faults, no requests seen, every tool as first defined."""
        with self._lock:
            self.desk.reset()
            self.faults.clear()
            self.faults.fired.clear()
            self.seen.clear()
            changed, self.changes = list(self.changes), {}
            if self._mcp is not None:
                for name in changed:
                    replace(self._mcp, self._specs[name], None)

    def calls(self, tool: str | None = None) -> list[Seen]:
        """The ``tools/call`` requests received (of ``tool``), in order."""
        return [s for s in self.seen if s.method == "tools/call" and (tool is None or s.tool == tool)]

    def _heard(self, seen: Seen) -> None:
        """A line for the sink per tool call: which tool, under which key (what ``lockgate local`` shows)."""
        if self.sink is not None and seen.method == "tools/call":
            key = f" [{seen.idempotency_key}]" if seen.idempotency_key else ""
            self.sink(f"{self.name}: tools/call {seen.tool}{key}")

    @staticmethod
    def _wait_started(server: uvicorn.Server, thread: threading.Thread) -> None:
        deadline = time.monotonic() + 10
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the example MCP server did not start")
            time.sleep(0.005)
