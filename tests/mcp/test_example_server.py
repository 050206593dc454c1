"""The example MCP server itself: its record of effects per key, its faults, and its control API."""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from lockgate.mcp.failures import McpToolError
from lockgate_infra.mcp_example import EXAMPLE_TOKEN, McpExample
from tests.mcp.conftest import client

ROOT = Path(__file__).resolve().parents[2]


def control(server: McpExample, method: str, path: str, body: Any = None, token: str = EXAMPLE_TOKEN) -> Any:
    """One control API request; an HTTP error's status and JSON come back as ``(status, body)``."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(  # noqa: S310 - loopback http only
        server.url.removesuffix("/mcp") + path,
        data=data,
        method=method,
        headers={"Authorization": f"Bearer {token}"},
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:  # noqa: S310
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_a_key_reused_with_other_arguments_is_refused_and_acts_no_more(
    server: McpExample, tls: ssl.SSLContext
) -> None:
    mcp = client(server, tls)
    mcp.call_tool("issue_credit", {"ticket_id": "T-1", "amount_cents": 100}, idempotency_key="k")
    with pytest.raises(McpToolError) as refused:
        mcp.call_tool("issue_credit", {"ticket_id": "T-1", "amount_cents": 900}, idempotency_key="k")
    assert "was used with other arguments" in refused.value.result.text()
    assert server.desk.tickets["T-1"].credited_cents == 100 and server.desk.acted("k") == 1


def test_writes_without_a_key_act_each_time(server: McpExample, tls: ssl.SSLContext) -> None:
    mcp = client(server, tls)
    for _ in range(2):
        mcp.call_tool("add_comment", {"ticket_id": "T-1", "body": "ping"})
    assert server.desk.tickets["T-1"].comments == ["ping", "ping"]


def test_a_fault_hits_only_its_tool_and_only_as_often_as_armed(
    server: McpExample, tls: ssl.SSLContext
) -> None:
    server.faults.malformed_answer(tool="add_comment", times=2)
    mcp = client(server, tls)
    mcp.call_tool("get_ticket", {"ticket_id": "T-1"})  # another tool: untouched
    outcomes = []
    for _ in range(3):
        try:
            mcp.call_tool("add_comment", {"ticket_id": "T-1", "body": "x"})
            outcomes.append("ok")
        except Exception as exc:  # noqa: BLE001 - recording which failed
            outcomes.append(type(exc).__name__)
    assert outcomes == ["McpProtocolError", "McpProtocolError", "ok"]
    assert [(f.kind, f.tool) for f in server.faults.fired] == [("malformed", "add_comment")] * 2


def test_the_control_api_shows_effects_per_key_and_arms_faults(
    server: McpExample, tls: ssl.SSLContext
) -> None:
    # Given a credit made under a key
    client(server, tls).call_tool(
        "issue_credit", {"ticket_id": "T-2", "amount_cents": 250}, idempotency_key="op-5"
    )
    # When its state is read over HTTP
    status, state = control(server, "GET", "/_example/state")
    # Then the effect is there with its key, and the call that made it
    assert status == 200
    assert [(e["tool"], e["key"], e["arguments"]) for e in state["effects"]] == [
        ("issue_credit", "op-5", {"ticket_id": "T-2", "amount_cents": 250})
    ]
    assert [(c["tool"], c["idempotency_key"]) for c in state["calls"]] == [("issue_credit", "op-5")]
    # And faults and tool changes can be armed over HTTP too
    assert control(server, "POST", "/_example/faults", {"kind": "crash", "tool": "add_comment"})[0] == 200
    assert control(server, "POST", "/_example/tools/get_ticket", {"description": "new"})[0] == 200
    assert server.faults.take("crash", "add_comment") is not None
    assert client(server, tls).list_tools().tools["get_ticket"].description == "new"
    # And nonsense is refused, as is a caller without the token
    assert control(server, "POST", "/_example/faults", {"kind": "meteor"})[0] == 400
    assert control(server, "GET", "/_example/state", token="wrong")[0] == 401


def test_the_seen_requests_never_hold_the_credential(server: McpExample, tls: ssl.SSLContext) -> None:
    client(server, tls, protocol="2025-11-25").call_tool("get_ticket", {"ticket_id": "T-1"})
    assert EXAMPLE_TOKEN not in repr(server.seen)
    assert {s.method for s in server.seen} >= {"initialize", "tools/list", "tools/call"}


def test_as_a_stand_in_it_tells_its_sink_each_tool_call_by_tool_and_key_never_the_credential(
    tls: ssl.SSLContext,
) -> None:
    # Given the server as lockgate local runs a stand-in: named, with a sink for its console lines
    lines: list[str] = []
    played = McpExample(name="ticketing service (example)", sink=lines.append)
    assert not played.running
    with played:
        assert played.running
        # When a client reads a ticket and comments under a key
        mcp = client(played, tls, protocol="2025-11-25")  # the handshake era: initialize, tools/list too
        mcp.call_tool("get_ticket", {"ticket_id": "T-1"})
        mcp.call_tool("add_comment", {"ticket_id": "T-1", "body": "hi"}, idempotency_key="lg_k1")
    # Then each tools/call is one line, naming the tool and its key; nothing else, never the token
    assert lines == [
        "ticketing service (example): tools/call get_ticket",
        "ticketing service (example): tools/call add_comment [lg_k1]",
    ]
    assert not played.running and played.activity.handled >= 2 and played.kind == "mcp"


@pytest.mark.slow
def test_python_m_serves_it_from_another_process(tls: ssl.SSLContext) -> None:
    # Given the server started as a command on a port of its choosing
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "infra"), str(ROOT / "layers" / "core")])}
    process = subprocess.Popen(
        [sys.executable, "-m", "lockgate_infra.mcp_example", "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        url = line.split(" at ")[1].split(" ")[0]
        # When a client lists and calls it
        remote = McpExample(port=int(url.rsplit(":", 1)[1].removesuffix("/mcp")))
        listing = client(remote, tls).list_tools()
        client(remote, tls).call_tool(
            "close_ticket", {"ticket_id": "T-3", "reason": "x"}, idempotency_key="z"
        )
        # Then it answers, and its control API shows what it did
        assert "close_ticket" in listing.tools
        status, state = control(remote, "GET", "/_example/state")
        assert status == 200 and [e["key"] for e in state["effects"]] == ["z"]
    finally:
        process.terminate()
        process.wait(timeout=10)
