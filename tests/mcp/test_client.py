"""The client against the example server over loopback HTTP: what works, in both protocol eras."""

from __future__ import annotations

import ssl
import traceback

import pytest

from lockgate.mcp.client import McpClient
from lockgate.mcp.failures import McpRefused, McpToolError
from lockgate.mcp.servers import Credential, ServerSettings
from lockgate_infra.mcp_example import EXAMPLE_TOKEN, McpExample
from tests.mcp.conftest import ERAS, client

WRITES = {"add_comment", "close_ticket", "issue_credit"}


@pytest.mark.parametrize("era", ERAS)
def test_given_a_server_when_its_tools_are_listed_then_every_tool_comes_with_its_definition(
    server: McpExample, tls: ssl.SSLContext, era: str
) -> None:
    # When the tools are listed under the pinned era
    listing = client(server, tls, protocol=era).list_tools()
    # Then all six come back, at that protocol version, read by this SDK, with their hints as listed
    assert sorted(listing.tools) == [
        "add_comment",
        "close_ticket",
        "find_effect",
        "get_ticket",
        "issue_credit",
        "list_tickets",
    ]
    assert (listing.protocol_version, listing.sdk_version, listing.rejected) == (era, "mcp 2.3.0", {})
    assert listing.url == server.url
    credit = listing.tools["issue_credit"]
    assert credit.annotations == {"destructiveHint": True, "idempotentHint": False, "openWorldHint": True}
    assert credit.input_schema["required"] == ["ticket_id", "amount_cents"]
    # And the handshake era made a session; the 2026 one sent no handshake at all
    methods = [seen.method for seen in server.seen]
    assert ("initialize" in methods) == (era == "2025-11-25")


@pytest.mark.parametrize("era", ERAS)
def test_given_a_read_tool_when_called_then_its_answer_comes_back_as_untrusted_json(
    server: McpExample, tls: ssl.SSLContext, era: str
) -> None:
    # When get_ticket is called
    result = client(server, tls, protocol=era).call_tool("get_ticket", {"ticket_id": "T-2"})
    # Then its structured content is there, labelled as untrusted content from that tool
    data = result.to_json()
    assert data["untrusted"] is True and data["source"] == "mcp:tickets/get_ticket"
    assert data["structuredContent"]["title"] == "Where is my order?"
    assert data["structuredContent"]["body"] == "Order A-1042 has not arrived."
    # And the SDK's text copy of it is not passed on too (the same data, read once)
    assert data["content"] == []
    assert (result.is_error, result.cut, result.note) == (False, False, None)


@pytest.mark.parametrize("era", ERAS)
def test_given_a_write_with_a_key_when_it_is_sent_twice_then_the_server_acts_once_and_answers_alike(
    server: McpExample, tls: ssl.SSLContext, era: str
) -> None:
    mcp = client(server, tls, protocol=era)
    # When the same credit is sent twice under one idempotency key
    first = mcp.call_tool("issue_credit", {"ticket_id": "T-1", "amount_cents": 500}, idempotency_key="op-1")
    again = mcp.call_tool("issue_credit", {"ticket_id": "T-1", "amount_cents": 500}, idempotency_key="op-1")
    # Then the customer is credited once, and the repeat got the first answer
    assert server.desk.tickets["T-1"].credited_cents == 500
    assert server.desk.acted("op-1") == 1 and server.desk.replays == [("op-1", "issue_credit")]
    assert first.structured == again.structured
    # And the key travelled on the calls only, never on the listings before them
    assert [(s.method, s.idempotency_key) for s in server.seen if s.method.startswith("tools/")] == [
        ("tools/list", None),
        ("tools/call", "op-1"),
        ("tools/list", None),
        ("tools/call", "op-1"),
    ]


def test_given_a_key_header_named_in_the_config_then_the_server_reads_the_key_from_it(
    tls: ssl.SSLContext,
) -> None:
    # Given a server that takes its key from X-Request-Key
    with McpExample(key_header="X-Request-Key") as server:
        mcp = client(server, tls)
        # When the same comment is sent twice with that header
        for _ in range(2):
            mcp.call_tool(
                "add_comment",
                {"ticket_id": "T-3", "body": "Fixed."},
                idempotency_key="k-7",
                key_header="X-Request-Key",
            )
        # Then it was added once
        assert server.desk.tickets["T-3"].comments == ["Fixed."]


@pytest.mark.parametrize("era", ERAS)
def test_given_a_tool_that_reports_an_error_then_the_model_gets_its_text_and_nothing_changed(
    server: McpExample, tls: ssl.SSLContext, era: str
) -> None:
    # Given an already closed ticket
    mcp = client(server, tls, protocol=era)
    mcp.call_tool("close_ticket", {"ticket_id": "T-1", "reason": "done"})
    # When it is closed again
    with pytest.raises(McpToolError) as failed:
        mcp.call_tool("close_ticket", {"ticket_id": "T-1", "reason": "again"})
    # Then the failure is a definite one, carrying the tool's text as untrusted content
    assert failed.value.may_have_acted is False
    assert failed.value.result.is_error and "T-1 is already closed" in failed.value.result.text()
    assert failed.value.result.to_json()["isError"] is True
    assert len(server.desk.effects) == 1


@pytest.mark.parametrize(("given", "status"), [("wrong-token", 401), ("read-only-token", 403)])
@pytest.mark.parametrize("era", ERAS)
def test_given_credentials_the_server_refuses_then_nothing_runs_and_the_status_is_kept(
    tls: ssl.SSLContext, era: str, given: str, status: int
) -> None:
    with McpExample(forbidden_token="read-only-token") as server:
        mcp = client(server, tls, protocol=era, credential=Credential.bearer(given))
        # When a write is attempted with them
        with pytest.raises(McpRefused) as refused:
            mcp.call_tool("close_ticket", {"ticket_id": "T-1", "reason": "x"})
        # Then it is refused with the server's status, nothing ran, and no message shows the token
        assert (refused.value.status, refused.value.may_have_acted) == (status, False)
        assert server.desk.effects == [] and server.calls() == []
        shown = "".join(traceback.format_exception(refused.value)) + repr(mcp.settings)
        assert given not in shown and EXAMPLE_TOKEN not in shown


def test_given_a_named_auth_header_then_the_credential_is_sent_in_it(tls: ssl.SSLContext) -> None:
    # Given a server that wants its key in X-Api-Key
    with McpExample(auth_header="X-Api-Key", token="k-123") as server:
        # When listed with that header, and with a bearer token instead
        listing = client(server, tls, credential=Credential("X-Api-Key", "k-123")).list_tools()
        with pytest.raises(McpRefused):
            client(server, tls, credential=Credential.bearer("k-123")).list_tools()
        # Then only the named header was accepted
        assert "get_ticket" in listing.tools


def test_a_credential_never_shows_in_a_repr_and_header_names_are_checked() -> None:
    assert "s3cret" not in repr(Credential.bearer("s3cret"))
    for bad in ("Content-Type", "Mcp-Session-Id", "X Bad"):
        with pytest.raises(ValueError, match="not a header name"):
            Credential(bad, "v")
    with pytest.raises(ValueError, match="line break"):
        Credential("X-Api-Key", "v\r\nX-Injected: 1")
    # And a credential in the URL (which the HTTP client logs) or a key that breaks a header is refused
    with pytest.raises(ValueError, match="put credentials in its secret"):
        ServerSettings("tickets", "https://user:s3cret@tickets.example.com/mcp")
    with pytest.raises(ValueError, match="printable ASCII"):
        McpClient(ServerSettings("tickets", "http://127.0.0.1:9/mcp")).call_tool(
            "t", {}, idempotency_key="a\nb"
        )


def test_given_every_tool_when_listed_and_called_then_writes_are_the_only_effects(
    server: McpExample, tls: ssl.SSLContext
) -> None:
    mcp = client(server, tls)
    # When the reads run
    tickets = mcp.call_tool("list_tickets", {"status": "open"})
    mcp.call_tool("get_ticket", {"ticket_id": "T-1"})
    # Then the server recorded no effect
    assert [t["id"] for t in (tickets.structured or {})["tickets"]] == ["T-1", "T-2", "T-3"]
    assert server.desk.effects == []
    # And each write made exactly one
    mcp.call_tool("add_comment", {"ticket_id": "T-2", "body": "On its way."})
    mcp.call_tool("close_ticket", {"ticket_id": "T-2", "reason": "answered"})
    assert [e.tool for e in server.desk.effects] == ["add_comment", "close_ticket"]
    assert {e.tool for e in server.desk.effects} <= WRITES


def test_given_calls_from_several_threads_at_once_then_each_runs_in_its_own_loop_once(
    server: McpExample, tls: ssl.SSLContext
) -> None:
    from concurrent.futures import ThreadPoolExecutor

    # Given one client shared by a batch's records, each on its own thread (as the worker runs them)
    mcp = client(server, tls)

    def comment(n: int) -> str:
        result = mcp.call_tool("add_comment", {"ticket_id": "T-1", "body": f"c{n}"}, idempotency_key=f"k{n}")
        return str((result.structured or {})["effect"])

    # When eight comments are added at once
    with ThreadPoolExecutor(max_workers=4) as pool:
        effects = list(pool.map(comment, range(8)))
    # Then each was added once, and each call got its own effect back
    assert len(set(effects)) == 8 and sorted(server.desk.tickets["T-1"].comments) == sorted(
        f"c{n}" for n in range(8)
    )


def test_called_from_a_running_event_loop_it_says_it_is_synchronous_instead_of_failing_a_call(
    server: McpExample, tls: ssl.SSLContext
) -> None:
    import asyncio

    async def inside_a_loop() -> None:
        client(server, tls).list_tools()

    with pytest.raises(RuntimeError, match="McpClient is synchronous"):
        asyncio.run(inside_a_loop())
    assert server.seen == []
