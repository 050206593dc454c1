"""From what the transport saw to a failure type: whether the call left, then what came back."""

from __future__ import annotations

import pytest

from lockgate.mcp.failures import (
    McpFailure,
    McpNotSent,
    McpOutcomeUnknown,
    McpProtocolError,
    McpRefused,
    McpResultTooLarge,
)
from lockgate.mcp.outcomes import classify
from lockgate.mcp.transport import Exchange, Probe, answer_kind


class SdkError(Exception):
    """Stands in for the SDK's MCPError: only its code is read."""

    def __init__(self, code: int) -> None:
        super().__init__(f"error {code}")
        self.code = code


def listed() -> Exchange:
    return Exchange("tools/list", bytes_sent=True, status=200, answer="result")


def call(sent: bool = True, status: int | None = 200, **seen: object) -> list[Exchange]:
    """A listing that went well, then the call as the transport saw it."""
    return [listed(), Exchange("tools/call", sent, status, **seen)]  # type: ignore[arg-type]


NOT_SENT, UNKNOWN = (
    {"failure": "not_sent", "error": "ConnectError"},
    {"failure": "unknown", "error": "ReadTimeout"},
)
E = SdkError
# (case, exchanges, the SDK's exception, the failure, may the server have acted)
CASES: list[tuple[str, list[Exchange], Exception, type[McpFailure], bool]] = [
    ("refused at the handshake", [Exchange("initialize", True, 401)], E(-32603), McpRefused, False),
    ("forbidden on the call", call(status=403), E(-32603), McpRefused, False),
    ("down: connect failed", [Exchange("tools/list", False, None, **NOT_SENT)], E(-32603), McpNotSent, False),
    (
        "listing timed out: call never sent",
        [Exchange("tools/list", True, None, **UNKNOWN)],
        E(-32603),
        McpNotSent,
        False,
    ),
    ("call failed before its bytes left", call(False, None, **NOT_SENT), E(-32603), McpNotSent, False),
    ("call sent, read timed out", call(True, None, **UNKNOWN), E(-32603), McpOutcomeUnknown, True),
    ("call sent, the SDK gave up waiting", call(True, None), E(-32001), McpOutcomeUnknown, True),
    ("call sent, SSE stream ended", call(answer="malformed"), E(-32000), McpOutcomeUnknown, True),
    ("session lost: 404", call(status=404, answer="error", error_code=-32600), E(-32600), McpNotSent, False),
    ("rate limited: 429", call(status=429), E(-32603), McpNotSent, False),
    ("server error 500", call(status=500), E(-32603), McpOutcomeUnknown, True),
    ("400 without a JSON-RPC body", call(status=400), E(-32603), McpProtocolError, False),
    ("redirected, not followed", call(status=307, answer="malformed"), E(-32600), McpProtocolError, False),
    (
        "cut off mid-answer by a deadline",
        call(status=200, reading=True),
        TimeoutError(),
        McpOutcomeUnknown,
        True,
    ),
    ("an answer of the wrong content type", call(status=200), E(-32600), McpProtocolError, True),
    (
        "accepted (202) and never answered",
        call(status=202, answer="malformed"),
        E(-32600),
        McpProtocolError,
        True,
    ),
    ("invalid params", call(answer="error", error_code=-32602), E(-32602), McpProtocolError, False),
    (
        "the tool's own JSON-RPC error",
        call(answer="error", error_code=-32042),
        E(-32042),
        McpProtocolError,
        True,
    ),
    (
        "internal error after dispatch",
        call(answer="error", error_code=-32603),
        E(-32603),
        McpProtocolError,
        True,
    ),
    ("answer not JSON", call(answer="malformed"), E(-32700), McpProtocolError, True),
    ("result of the wrong shape", call(answer="result"), ValueError("validation"), McpProtocolError, True),
]


@pytest.mark.parametrize(
    ("exchanges", "error", "kind", "may_have_acted"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_a_failed_call_is_classified_by_whether_it_left_and_what_came_back(
    exchanges: list[Exchange], error: Exception, kind: type[McpFailure], may_have_acted: bool
) -> None:
    failure = classify(error, Probe(exchanges), server="tickets", tool="issue_credit", limit=1000)
    assert (type(failure), failure.may_have_acted) == (kind, may_have_acted)
    assert (failure.server, failure.tool) == ("tickets", "issue_credit")


def test_an_oversized_answer_is_too_large_whatever_else_happened() -> None:
    probe = Probe([listed(), Exchange("tools/call", True, 200, "unknown", "AnswerLost")], oversized=True)
    failure = classify(SdkError(-32000), probe, server="s", tool="t", limit=5)
    assert isinstance(failure, McpResultTooLarge) and failure.limit == 5


def test_a_listing_that_fails_after_sending_is_classified_on_its_last_request() -> None:
    probe = Probe(
        [Exchange("tools/list", True, 200, answer="error", error_code=-32601), Exchange("DELETE", True, 200)]
    )
    failure = classify(SdkError(-32601), probe, server="s", tool=None, limit=5)
    assert isinstance(failure, McpProtocolError) and failure.code == -32601 and not failure.may_have_acted
    assert "the server does not know the method" in str(failure)


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        (b'{"jsonrpc":"2.0","id":1,"result":{}}', ("result", None)),
        (b'{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad"}}', ("error", -32602)),
        (b'event: message\ndata: {"jsonrpc":"2.0","id":2,"result":{"content":[]}}\n\n', ("result", None)),
        (
            b'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress"}\n\n',
            ("malformed", None),
        ),
        (b"this is not JSON", ("malformed", None)),
        (b"", ("malformed", None)),
    ],
)
def test_the_transport_tells_a_result_from_an_error_in_json_and_in_server_sent_events(
    body: bytes, kind: tuple[str, int | None]
) -> None:
    assert answer_kind(body) == kind
