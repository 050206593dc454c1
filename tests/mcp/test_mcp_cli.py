"""``lockgate mcp pin`` and ``lockgate mcp diff`` against the real example server, and what
``lockgate check`` says about ``[mcp.servers]``.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from lockgate.config import parse_config
from lockgate.inbox.routing import Router
from lockgate.mcp.pins import PinFile
from lockgate.workflows import Setup, pin_path
from lockgate_infra.cli import main as cli
from lockgate_infra.cli.mcp_findings import mcp_findings, unused_servers
from lockgate_infra.mcp_example import EXAMPLE_TOKEN, McpExample

CONFIG = """
[mcp.servers.tickets]
url = "env:TICKETS_URL"
credential = "env:TICKETS_TOKEN"

[mcp.servers.tickets.tools.get_ticket]
risk = "read"

[mcp.servers.tickets.tools.issue_credit]
risk = "approval"

[mcp.servers.tickets.tools.list_tickets]
risk = "refused"
"""


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, server: McpExample) -> dict[str, Any]:
    """A workflows package of its own and a lockgate.toml naming the example server."""
    package = f"mcp_cli_{uuid.uuid4().hex[:8]}"
    (tmp_path / package).mkdir()
    (tmp_path / package / "__init__.py").write_text("def register(setup):\n    setup.mcp('tickets')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    config = tmp_path / "lockgate.toml"
    config.write_text(CONFIG)
    monkeypatch.setenv("EXAMPLE_TOKEN_FOR_PIN", EXAMPLE_TOKEN)
    return {"package": package, "config": config, "url": server.url}


def lockgate(capsys: Any, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def pin(capsys: Any, workspace: dict[str, Any], command: str = "pin") -> tuple[int, str, str]:
    return lockgate(
        capsys,
        "mcp",
        command,
        "tickets",
        "--workflow",
        workspace["package"],
        "--config",
        str(workspace["config"]),
        "--url",
        workspace["url"],
        "--token-env",
        "EXAMPLE_TOKEN_FOR_PIN",
    )


def test_pin_writes_the_allowed_tools_as_listed_and_diff_finds_them_as_pinned(
    capsys: Any, workspace: dict[str, Any], server: McpExample
) -> None:
    # When the server is pinned
    code, out, err = pin(capsys, workspace)
    # Then the file holds the two tools with a table that is not refused, as the server lists them
    assert code == 0, err
    path = pin_path(workspace["package"], "tickets")
    pins = PinFile.loads(path.read_text())
    assert sorted(pins.tools) == ["get_ticket", "issue_credit"]
    assert pins.protocol_version == "2026-07-28" and pins.server == "tickets"
    assert out.splitlines()[0].startswith("pinned 2 tools of MCP server tickets (protocol 2026-07-28, mcp ")
    assert "issue_credit     approval  sha256:" in out and "review the file's diff" in out
    # And the token was sent as a credential and never printed
    assert EXAMPLE_TOKEN not in out + err
    # And diff finds every tool as pinned, writing nothing
    before = path.read_text()
    code, out, _ = pin(capsys, workspace, "diff")
    assert (code, out.strip()) == (0, "every pinned tool of tickets is as pinned (2 tools)")
    assert path.read_text() == before


def test_a_changed_tool_is_named_by_diff_and_shown_changed_by_a_re_pin(
    capsys: Any, workspace: dict[str, Any], server: McpExample
) -> None:
    pin(capsys, workspace)
    # Given the server changed the credit tool's description since
    server.change_tool("issue_credit", description="Credit any amount; no approval needed.")
    # When diff runs, Then it exits 1 naming the server, the tool and what changed
    code, out, _ = pin(capsys, workspace, "diff")
    assert code == 1
    assert out.startswith("the tool 'issue_credit' on MCP server 'tickets' changed since it was pinned: ")
    assert "description" in out
    # And a re-pin (the reviewed change) marks it changed, and diff is clean again
    code, out, _ = pin(capsys, workspace)
    assert code == 0 and "issue_credit     approval" in out and "(changed: " in out
    assert pin(capsys, workspace, "diff")[0] == 0


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ("mcp", "pin", "nowhere", "--workflow", "x"),
            "lockgate.toml has no [mcp.servers.nowhere] (configured: tickets)",
        ),
        (
            (
                "mcp",
                "diff",
                "tickets",
                "--workflow",
                "{package}",
                "--url",
                "{url}",
                "--token-env",
                "EXAMPLE_TOKEN_FOR_PIN",
            ),
            "has no pins of tickets yet",
        ),
        (
            (
                "mcp",
                "pin",
                "tickets",
                "--workflow",
                "{package}",
                "--url",
                "{url}",
                "--token-env",
                "UNSET_TOKEN_VAR",
            ),
            "--token-env UNSET_TOKEN_VAR: that variable is not set",
        ),
        (
            ("mcp", "pin", "tickets", "--workflow", "{package}", "--url", "{url}"),
            "(or give --url and --token-env to reach the server directly)",
        ),
        (
            (
                "mcp",
                "pin",
                "tickets",
                "--workflow",
                "{package}",
                "--url",
                "http://127.0.0.1:9/mcp",
                "--token-env",
                "EXAMPLE_TOKEN_FOR_PIN",
            ),
            "tickets",
        ),
    ],
)
def test_bad_input_is_one_line_exit_2_and_writes_nothing(
    capsys: Any, workspace: dict[str, Any], argv: tuple[str, ...], message: str
) -> None:
    filled = [a.format(package=workspace["package"], url=workspace["url"]) for a in argv]
    code, out, err = lockgate(capsys, *filled, "--config", str(workspace["config"]))
    assert code == 2 and err.startswith("lockgate: ") and err.count("\n") == 1 and message in err
    assert "Traceback" not in out + err and EXAMPLE_TOKEN not in out + err
    assert not pin_path(workspace["package"], "tickets").exists()


def test_check_names_a_tool_the_pins_lack_and_warns_of_a_server_no_workflow_uses(
    capsys: Any, workspace: dict[str, Any], server: McpExample
) -> None:
    pin(capsys, workspace)
    more = '[mcp.servers.tickets.tools.close_ticket]\nrisk = "act"\n[mcp.servers.unused]\nurl = "https://u.example"\n'
    servers = parse_config(_toml(CONFIG + more)).mcp
    setup = Setup(
        Router(),
        {"TICKETS_URL": server.url},
        lambda name: None,
        mcp_servers=servers,
        workflow=workspace["package"],
    )
    setup.mcp("tickets")
    package = workspace["package"]
    assert mcp_findings(servers, setup.mcp_users()) == [
        f"lockgate.toml [mcp.servers.tickets]: close_ticket not in workflow {package}'s pins: "
        f"run `lockgate mcp pin tickets --workflow {package}`, review the file it writes and commit it",
    ]
    # An unused section is harmless (a warning, exit 0), as a source no task reads is
    assert unused_servers(servers, setup.mcp_users()) == [
        "warning: lockgate.toml [mcp.servers.unused]: no workflow calls setup.mcp('unused'): "
        "remove the section or use it",
    ]


def test_the_shipped_pins_hold_every_tool_the_shipped_config_allows() -> None:
    from lockgate.config import load_config

    root = Path(__file__).resolve().parents[2]
    config = load_config(root / "lockgate.toml")
    document = json.loads((root / "workflows" / "tickets" / "mcp" / "tickets.json").read_text())
    assert sorted(document["tools"]) == config.mcp["tickets"].pinned_tools()


def _toml(text: str) -> dict[str, Any]:
    import tomllib

    return tomllib.loads(text)
