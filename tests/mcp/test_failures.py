"""Each MCP failure mode, staged on the real example server, ends as one typed failure.

For each: whether the server acted (its own record of effects), and whether the failure says so.
"""

from __future__ import annotations

import socket
import ssl

import pytest

from lockgate.mcp.failures import (
    McpNotSent,
    McpOutcomeUnknown,
    McpProtocolError,
    McpResultTooLarge,
)
from lockgate_infra.mcp_example import McpExample, Ticket
from tests.mcp.conftest import ERAS, client

CREDIT = {"ticket_id": "T-1", "amount_cents": 1500}


@pytest.mark.parametrize("era", ERAS)
def test_given_the_server_acted_and_answered_too_late_then_the_outcome_is_unknown_and_it_acted_once(
    server: McpExample, tls: ssl.SSLContext, era: str
) -> None:
    # Given a server that answers a second after acting, and a client that waits half that
    server.faults.answer_slowly(1.0, tool="issue_credit")
    mcp = client(server, tls, protocol=era, read_timeout=0.4)
    # When the credit is sent
    with pytest.raises(McpOutcomeUnknown) as unknown:
        mcp.call_tool("issue_credit", CREDIT, idempotency_key="op-9")
    # Then it is UNKNOWN (never "failed": the server did act, once)
    assert unknown.value.may_have_acted is True
    assert server.desk.acted("op-9") == 1
    # And reconciling by sending it again under the same key replays, never credits twice
    again = client(server, tls, protocol=era).call_tool("issue_credit", CREDIT, idempotency_key="op-9")
    assert (again.structured or {})["effect"] == server.desk.effects[0].id
    assert server.desk.tickets["T-1"].credited_cents == 1500


@pytest.mark.parametrize("era", ERAS)
def test_given_the_server_crashed_after_acting_then_the_outcome_is_unknown_and_it_acted_once(
    server: McpExample, tls: ssl.SSLContext, era: str
) -> None:
    # Given a server that drops the connection after acting, mid-answer
    server.faults.crash_after_acting(tool="close_ticket")
    # When the ticket is closed
    with pytest.raises(McpOutcomeUnknown) as unknown:
        client(server, tls, protocol=era).call_tool(
            "close_ticket", {"ticket_id": "T-2", "reason": "x"}, idempotency_key="op-3"
        )
    # Then the call is UNKNOWN, and the server's own record shows it acted once
    assert unknown.value.may_have_acted is True and unknown.value.tool == "close_ticket"
    assert server.desk.acted("op-3") == 1 and server.desk.tickets["T-2"].status == "closed"
    assert [f.kind for f in server.faults.fired] == ["crash"]


@pytest.mark.parametrize("era", ERAS)
def test_given_the_server_is_down_then_the_call_was_not_sent(tls: ssl.SSLContext, era: str) -> None:
    # Given a port nothing listens on
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/mcp"
    mcp = client(McpExample(port=port), tls, protocol=era, url=url)
    # When a write is attempted
    with pytest.raises(McpNotSent) as not_sent:
        mcp.call_tool("issue_credit", CREDIT, idempotency_key="op-1")
    # Then it was not sent, so a retry is safe, and the message says why
    assert not_sent.value.may_have_acted is False
    assert "ConnectError" in str(not_sent.value)


def test_given_a_server_that_flaps_then_calls_fail_unsent_while_down_and_work_once_it_is_back(
    own_server: McpExample, tls: ssl.SSLContext
) -> None:
    mcp = client(own_server, tls)
    # When the server refuses connections for a moment
    back = own_server.flap(0.5)
    with pytest.raises(McpNotSent):
        mcp.call_tool("add_comment", {"ticket_id": "T-1", "body": "hello"}, idempotency_key="k")
    back.join(timeout=10)
    # Then the same call, sent again after it came back, acts once, on the same state
    mcp.call_tool("add_comment", {"ticket_id": "T-1", "body": "hello"}, idempotency_key="k")
    assert own_server.desk.acted("k") == 1 and own_server.desk.tickets["T-1"].comments == ["hello"]


def test_given_the_server_lost_the_session_before_the_call_then_it_was_not_run(
    server: McpExample, tls: ssl.SSLContext
) -> None:
    # Given a handshake-era session the server forgets before the call arrives (as after a restart)
    server.faults.lose_session()
    # When a write is sent
    with pytest.raises(McpNotSent) as not_sent:
        client(server, tls, protocol="2025-11-25").call_tool("issue_credit", CREDIT, idempotency_key="op-4")
    # Then the server turned it away unread (404): nothing ran, sending it again is safe
    assert "HTTP 404" in str(not_sent.value)
    assert server.desk.effects == []
    assert [(s.method, s.session) for s in server.calls()] == [("tools/call", True)]


@pytest.mark.parametrize("era", ERAS)
def test_given_a_result_over_the_limit_then_it_is_cut_with_a_note(
    server: McpExample, tls: ssl.SSLContext, era: str
) -> None:
    # Given a ticket whose body is 300 kB
    server.desk.add_ticket(Ticket("T-9", "Logs attached", "dee@example.com", "x" * 300_000))
    # When it is read with a 10 kB result limit
    result = client(server, tls, protocol=era, max_result_bytes=10_000).call_tool(
        "get_ticket", {"ticket_id": "T-9"}
    )
    # Then the model gets at most 10 kB, and a note saying it was cut
    assert result.cut and result.note is not None and "over the 10000 allowed" in result.note
    assert len(str(result.to_json()["content"])) <= 10_000 and result.structured is None
    assert result.to_json()["note"] == result.note


@pytest.mark.parametrize("era", ERAS)
def test_given_an_answer_over_the_read_ceiling_then_it_is_not_read_and_the_call_may_have_run(
    server: McpExample, tls: ssl.SSLContext, era: str
) -> None:
    # Given a ticket bigger than the client reads at all
    server.desk.add_ticket(Ticket("T-9", "Logs attached", "dee@example.com", "x" * 300_000))
    mcp = client(server, tls, protocol=era, max_result_bytes=10_000, max_response_bytes=100_000)
    # When it is read
    with pytest.raises(McpResultTooLarge) as too_large:
        mcp.call_tool("get_ticket", {"ticket_id": "T-9"})
    # Then the answer was not read, and the failure has a note for the model
    assert too_large.value.limit == 100_000 and too_large.value.may_have_acted is True
    assert too_large.value.note == "The result was larger than 100000 bytes and was not read."


@pytest.mark.parametrize("kind", ["not_json", "bad_result", "html"])
@pytest.mark.parametrize("era", ERAS)
def test_given_a_malformed_answer_after_acting_then_it_is_a_protocol_error_that_may_have_run(
    server: McpExample, tls: ssl.SSLContext, era: str, kind: str
) -> None:
    # Given a server whose answer to the next call is not a valid result
    server.faults.malformed_answer(tool="add_comment", kind=kind)  # type: ignore[arg-type]
    # When a comment is added
    with pytest.raises(McpProtocolError) as failed:
        client(server, tls, protocol=era).call_tool("add_comment", {"ticket_id": "T-1", "body": "hi"})
    # Then it is a protocol error that says the tool may have run, and it did, once
    assert failed.value.may_have_acted is True and failed.value.code is None
    assert len(server.desk.effects) == 1
