"""The example server's control API, for a server in another process (``python -m``, chaos runs).

Behind the same credential as MCP:

- ``GET /_example/state``: tickets, effects (what it actually did, with each key), replays, the
  ``tools/call`` requests received and the faults that fired;
- ``POST /_example/faults``: arm a fault, ``{"kind": "crash" | "slow" | "malformed" |
  "lose_session", "tool": ..., "times": ..., "seconds": ..., "before_acting": ..., "malformed": ...}``;
- ``DELETE /_example/faults``: disarm every fault;
- ``POST /_example/tools/NAME``: change a tool, ``{"description": ..., "new_argument": ...,
  "destructive": true | false}``;
- ``POST /_example/flap``: refuse connections for ``{"seconds": ...}``, then serve again.
"""

from __future__ import annotations

import json
import threading
from dataclasses import asdict, fields
from typing import Any, Protocol

from mcp.types import ToolAnnotations

from lockgate_infra.mcp_example.desk import Desk
from lockgate_infra.mcp_example.faults import Fault, Faults
from lockgate_infra.mcp_example.front import Seen


class Controlled(Protocol):
    """What the control API drives (``McpExample``)."""

    desk: Desk
    faults: Faults

    def calls(self, tool: str | None = None) -> list[Seen]:
        """The tools/call requests received."""
        ...

    def flap(self, down_for: float) -> threading.Thread:
        """Refuse connections for a while."""
        ...

    def change_tool(
        self,
        name: str,
        *,
        description: str | None = None,
        new_argument: str | None = None,
        annotations: ToolAnnotations | None = None,
    ) -> None:
        """Change a tool's definition."""
        ...


FAULT_FIELDS = ({f.name for f in fields(Fault)} - {"remaining"}) | {"times"}


def control(example: Controlled, method: str, path: str, body: bytes) -> tuple[int, Any]:
    """Answer one control request: (status, JSON payload)."""
    try:
        request = json.loads(body) if body.strip() else {}
    except ValueError:
        return 400, {"error": "the body is not JSON"}
    if not isinstance(request, dict):
        return 400, {"error": "the body is not a JSON object"}
    route = (method, path.removeprefix("/_example/"))
    if route == ("GET", "state"):
        return 200, state(example)
    if route == ("DELETE", "faults"):
        example.faults.clear()
        return 200, {"cleared": True}
    if route == ("POST", "faults"):
        return _arm(example, request)
    if route == ("POST", "flap"):
        seconds = float(request.get("seconds", 1.0))
        # Not on this thread: stopping the server waits for the thread that answers this request.
        threading.Thread(target=example.flap, args=(seconds,), daemon=True).start()
        return 202, {"down_for": seconds}
    if method == "POST" and route[1].startswith("tools/"):
        return _change(example, route[1].removeprefix("tools/"), request)
    return 404, {"error": f"no control route {method} {path}"}


def state(example: Controlled) -> dict[str, Any]:
    """What the server holds and did, as JSON-able data."""
    return {
        **example.desk.snapshot(),
        "calls": [asdict(seen) for seen in example.calls()],
        "fired": [asdict(fired) for fired in example.faults.fired],
    }


def _arm(example: Controlled, request: dict[str, Any]) -> tuple[int, Any]:
    unknown = set(request) - FAULT_FIELDS
    if unknown or request.get("kind") not in ("crash", "slow", "malformed", "lose_session"):
        return 400, {"error": f"a fault needs a known kind and only {sorted(FAULT_FIELDS)}"}
    settings = {k: v for k, v in request.items() if k != "times"}
    example.faults.arm(Fault(**settings, remaining=request.get("times", 1)))
    return 200, {"armed": request}


def _change(example: Controlled, name: str, request: dict[str, Any]) -> tuple[int, Any]:
    if name not in {"list_tickets", "get_ticket", "add_comment", "close_ticket", "issue_credit"}:
        return 404, {"error": f"no tool {name!r}"}
    destructive = request.get("destructive")
    annotations = None if destructive is None else ToolAnnotations(destructive_hint=bool(destructive))
    example.change_tool(
        name,
        description=request.get("description"),
        new_argument=request.get("new_argument"),
        annotations=annotations,
    )
    return 200, {"changed": name}
