"""What can go wrong talking to an MCP server, as types a caller routes on (never on message text).

Each failure says whether the server may have acted on the request (``may_have_acted``): a call
that certainly did not run can be retried or reported as failed; one that may have run is the
ledger's UNKNOWN and is reconciled, never sent again blindly. Messages name the server and the
tool, never a credential; text the server supplied is clipped and kept on one line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lockgate.errors import LockgateError

if TYPE_CHECKING:
    from lockgate.mcp.results import ToolResult


class McpFailure(LockgateError):
    """Base class: an MCP operation gave no usable result."""

    may_have_acted: bool = False
    """True when the request reached the server and it may have done the work."""

    def __init__(self, message: str, *, server: str, tool: str | None = None) -> None:
        super().__init__(message)
        self.server = server
        self.tool = tool


class McpRefused(McpFailure):
    """The server refused our credentials (401) or their rights (403): nothing ran; fix the secret."""

    def __init__(self, message: str, *, server: str, tool: str | None = None, status: int) -> None:
        super().__init__(message, server=server, tool=tool)
        self.status = status


class McpNotSent(McpFailure):
    """The request never reached the server or was turned away unread (down, DNS, a lost session).

    Nothing ran; sending it again is safe.
    """


class McpOutcomeUnknown(McpFailure):
    """The request was sent and no answer came (read timeout, connection dropped mid-answer).

    The server may have acted: reconcile, never resend blindly.
    """

    may_have_acted = True


class McpProtocolError(McpFailure):
    """The server answered with a JSON-RPC error, or with something that is not a valid result.

    ``code`` is the JSON-RPC error code when there was one. ``may_have_acted`` is False when the
    server rejected the request before running it (invalid request or params, unknown method, a
    protocol-version mismatch) and True when it answered a call with an error of its own or with a
    result we could not read (a tool may have run).
    """

    def __init__(
        self,
        message: str,
        *,
        server: str,
        tool: str | None = None,
        code: int | None = None,
        may_have_acted: bool = False,
    ) -> None:
        super().__init__(message, server=server, tool=tool)
        self.code = code
        self.may_have_acted = may_have_acted


class McpToolError(McpFailure):
    """The tool ran and reported an error (``isError``): ``result`` holds its text for the model.

    The answer is definite (the server says how the call ended), so this is a failure the model
    can act on, not an unknown outcome; what the tool did before failing is the server's to say.
    """

    def __init__(self, message: str, *, server: str, tool: str, result: ToolResult) -> None:
        super().__init__(message, server=server, tool=tool)
        self.result = result


class McpResultTooLarge(McpFailure):
    """The answer was larger than the client reads at all (``max_response_bytes``): it was not read.

    The tool ran (the server was answering) but how it ended is unknown; ``note`` says so for the
    model. Results over ``max_result_bytes`` but under that ceiling come back cut, with a note.
    """

    may_have_acted = True

    def __init__(self, message: str, *, server: str, tool: str | None = None, limit: int) -> None:
        super().__init__(message, server=server, tool=tool)
        self.limit = limit
        self.note = f"The result was larger than {limit} bytes and was not read."


class McpDefinitionChanged(McpFailure):
    """The server's live definition of a tool differs from the pinned one: the call was not sent."""

    def __init__(self, message: str, *, server: str, tool: str, changes: tuple[str, ...]) -> None:
        super().__init__(message, server=server, tool=tool)
        self.changes = changes
