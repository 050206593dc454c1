"""One call to an MCP server's tool, and what each way it can go wrong becomes for the run and the ledger.

- a result: the untrusted JSON the model reads (it taints the run);
- ``isError``: a tool error the model reads (the ledger: FAILED); it taints the run too;
- a changed definition: refused before anything is sent, naming the server, the tool and what
  changed (counted as ``McpToolChanged``: an alarm watches it);
- refused credentials (401/403), a server that cannot be reached, a request it rejected unread:
  nothing ran, said so (FAILED);
- sent, and no usable answer (a timeout, a dropped connection, a 5xx, an answer too large to read):
  the server may have acted. For a side effect that is ``OutcomeUnknown``, the ledger's UNKNOWN,
  which the reconcile job settles (the configured read tool, or a person), never a blind resend;
  only a tool marked ``safe_to_retry`` is sent once more, under the same key. A read just fails.

Names in logs and metrics are the server's and the tool's from lockgate.toml, never the server's text.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from lockgate.actions.tools import OutcomeUnknown, ToolError
from lockgate.mcp.failures import (
    McpDefinitionChanged,
    McpFailure,
    McpNotSent,
    McpRefused,
    McpToolError,
)
from lockgate.mcp.results import ToolResult
from lockgate.telemetry import Log, Metrics

Send = Callable[[], ToolResult]  # one attempt at the call


def called(  # noqa: PLR0913 - the call, and who it is about
    send: Send, *, server: str, tool: str, side_effect: bool, retry: bool, log: Log, metrics: Metrics
) -> Any:
    """The result as the model reads it, or the ToolError / OutcomeUnknown this call's failure means."""
    try:
        return _attempt(send, retry).to_json()
    except McpToolError as exc:
        # The server's own words (untrusted): the model reads them as an is_error result.
        raise ToolError(json.dumps(exc.result.to_json(), ensure_ascii=False, sort_keys=True)) from None
    except McpFailure as exc:
        kind = type(exc).__name__
        changed = isinstance(exc, McpDefinitionChanged)  # its own metric: the McpToolChanged alarm
        metrics.add_metric(name="McpToolChanged" if changed else "McpCallFailed", unit="Count", value=1)
        log.warning("mcp call failed", extra={"server": server, "tool": tool, "failure": kind})
        if exc.may_have_acted and side_effect:
            raise OutcomeUnknown(f"{tool} on MCP server {server}: {_said(exc)}") from None
        raise ToolError(_explained(exc, server, tool)) from None


def _attempt(send: Send, retry: bool) -> ToolResult:
    """One attempt, and a second only where it is safe: the first never reached the server, or the
    tool is marked safe to retry (the server dedupes on the ledger's key) and it may have acted."""
    try:
        return send()
    except McpNotSent:
        return send()
    except McpFailure as exc:  # a definition change, a refusal, an isError never "may have acted"
        if retry and exc.may_have_acted:
            return send()
        raise


def _explained(exc: McpFailure, server: str, tool: str) -> str:
    """What the model is told when nothing ran (or a read could not be finished)."""
    if isinstance(exc, McpDefinitionChanged):
        changes = "; ".join(c[:120] for c in exc.changes[:3])
        return (
            f"{tool} is refused: MCP server {server} changed it since it was reviewed and pinned "
            f"({changes}). Nothing was sent. A person must review the change and pin it again."
        )
    if isinstance(exc, McpRefused):
        return f"MCP server {server} refused the call ({exc.status}): nothing was done. Do not retry it."
    if isinstance(exc, McpNotSent):
        return f"MCP server {server} could not be reached: nothing was sent, nothing was done."
    return f"{tool} on MCP server {server} gave no usable answer: {_said(exc)}"


def _said(exc: McpFailure) -> str:
    """The failure's own message, one clipped line (it names the server and tool, never a credential)."""
    return " ".join(str(exc).split())[:300]


def reconcile_with(
    read: Callable[[Mapping[str, Any]], ToolResult],
    argument: str,
    *,
    server: str,
    tool: str,
    metrics: Metrics,
) -> Callable[[str, Mapping[str, Any]], Any]:
    """A reconcile hook asking a read tool what the call under a key did: its result; None when it
    answers with ``isError`` or ``{"found": false}`` (nothing under that key: a person is asked).

    A question that never reached the server (down, a lost session: ``McpNotSent``, after one more
    try) is not an answer: it is raised as is, and the reconcile job asks again on its next run. Any
    other failure (no usable answer, a changed definition) is ``OutcomeUnknown``: a person is asked;
    a changed definition of the read tool counts ``McpToolChanged`` too, so the alarm asks for a review.
    """

    def reconcile(key: str, services: Mapping[str, Any]) -> Any:
        try:
            found = _attempt(lambda: read({argument: key}), retry=False)
        except McpToolError:
            return None  # the server says no call was made under that key
        except McpNotSent:
            raise  # the downstream could not be asked: the entry stays UNKNOWN until it can
        except McpDefinitionChanged as exc:
            metrics.add_metric(name="McpToolChanged", unit="Count", value=1)
            raise OutcomeUnknown(_explained(exc, server, tool)) from None
        except McpFailure as exc:
            raise OutcomeUnknown(f"the reconcile tool gave no answer: {_said(exc)}") from None
        if found.structured is not None and found.structured.get("found") is False:
            return None
        return found.to_json()

    return reconcile
