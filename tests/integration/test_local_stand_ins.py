"""`lockgate local --stand-in VARIABLE=package.module:factory`: an outside API played beside the stack.

The functions read the stand-in's URL from ``VARIABLE``, as they read the real API's when deployed;
the stand-in records each call by its idempotency key, the console says so, and the status lists it.
"""

from __future__ import annotations

import io
import json
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from lockgate_infra.local.devsecrets import mcp_dev_credential
from lockgate_infra.local.model import ModelChoice
from lockgate_infra.local.outside_apis import StandInError, stand_ins_of, workflow_stand_ins
from lockgate_infra.local.run import read_local_state, servers
from lockgate_infra.mcp_example import McpExample
from tests.integration import test_local_stack as queue_project
from tests.support import local_stack_in_thread, run_cli

STAND_IN = "PAYMENTS_API_URL=docs.examples.payments:payments_stand_in"
ROOT = Path(__file__).resolve().parents[2]
HERE = "tests.integration.test_local_stand_ins"
# A receiver that refunds through the API named by PAYMENTS_API_URL, keyed by the delivery's body.
REFUNDER = """
import json, os, urllib.request


def handler(event, context):
    key = event["body"]
    request = urllib.request.Request(
        os.environ["PAYMENTS_API_URL"] + "/v1/refunds",
        data=b"charge=ch_1&amount=250&metadata[lockgate_key]=" + key.encode(),
        headers={"Idempotency-Key": key},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=5) as answer:
        refund = json.load(answer)
    return {"statusCode": 200, "headers": {"content-type": "application/json"}, "body": json.dumps(refund)}
"""


def project(folder: Path) -> Path:
    """The queue project of the local stack's tests, its receiver calling the payments API."""
    (folder / "template.yaml").write_text(queue_project.TEMPLATE, encoding="utf-8")
    (folder / "lockgate.toml").write_text("", encoding="utf-8")
    for name, code in (("receiver", REFUNDER), ("worker", queue_project.WORKER)):
        (folder / "functions" / name).mkdir(parents=True)
        (folder / "functions" / name / "app.py").write_text(textwrap.dedent(code), encoding="utf-8")
    return folder


def _until_handled(folder: Path, port: int, count: int) -> dict[str, Any]:
    """The stand-in's status row, once it says it handled ``count`` requests."""
    deadline = time.monotonic() + 20
    while True:
        state = read_local_state(folder, port) or {}
        rows = [r for r in state.get("status", {}).get("stand_ins", []) if r["kind"] == "api"]
        if rows and rows[0]["handled"] >= count:
            return dict(rows[0])
        assert time.monotonic() < deadline, f"the status never showed {count} handled: {rows}"
        time.sleep(0.1)


def test_given_a_stand_in_then_the_functions_call_it_by_its_variable_and_each_call_is_recorded_and_shown(
    tmp_path: Path,
) -> None:
    console = io.StringIO()
    folder = project(tmp_path)
    options = {"template_path": folder / "template.yaml", "config_path": folder / "lockgate.toml"}
    with local_stack_in_thread(console, stand_ins=[STAND_IN], **options) as stack:
        # When a function calls the API twice with the same key
        url = f"{stack.gateway.url}/webhooks/github"
        first = queue_project.request(url, b"k-1")
        again = queue_project.request(url, b"k-1")
        row = _until_handled(folder, stack.gateway.port, 2)  # the state file is refreshed each second
    # Then both got the same refund, and the stand-in made it once
    assert first[0] == again[0] == 200 and json.loads(first[2]) == json.loads(again[2])
    assert json.loads(first[2])["metadata"] == {"lockgate_key": "k-1"}
    # And the console said so, and the status lists the stand-in, alive, by its variable
    assert console.getvalue().count("payments API (stand-in): POST /v1/refunds [k-1]") == 1
    assert row["name"] == "payments API (stand-in) (PAYMENTS_API_URL)" and row["state"] == "alive"


def test_a_stand_in_that_names_no_factory_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _ = run_cli("local", "--stand-in", "PAYMENTS_API_URL=docs.examples.payments:nothing_here")

    assert code == 2
    assert capsys.readouterr().err == (
        "lockgate: --stand-in PAYMENTS_API_URL=docs.examples.payments:nothing_here: "
        "docs.examples.payments has no function nothing_here\n"
    )


def own_tickets_server() -> McpExample:
    """A user's own MCP stand-in for the tickets server (``--stand-in TICKETS_MCP_URL=...``)."""
    return McpExample(name="our ticketing MCP server", token=mcp_dev_credential("tickets"))


def test_a_workflows_own_stand_in_starts_with_the_stack_and_a_stand_in_given_replaces_it() -> None:
    lines: list[str] = []
    # Given the checkout's config, whose tickets workflow plays its MCP server (local_stand_ins)
    with stand_ins_of(ROOT / "lockgate.toml", (), lines.append) as own:
        played = own["TICKETS_MCP_URL"]
        # Then it is the example server, started, accepting the stack's development credential
        assert isinstance(played, McpExample) and played.running
        assert played.auth.accepted == (f"Bearer {mcp_dev_credential('tickets')}",)
        assert played.sink == lines.append
        (row,) = servers(ModelChoice("none", ""), None, own)
        assert (row.kind, row.name, row.url) == ("mcp", "example MCP server (TICKETS_MCP_URL)", played.url)
    assert not played.running
    # When a --stand-in names the same variable, the user's server plays it instead
    with stand_ins_of(ROOT / "lockgate.toml", [f"TICKETS_MCP_URL={HERE}:own_tickets_server"], None) as given:
        (row,) = servers(ModelChoice("none", ""), None, given)
        assert row.name == "our ticketing MCP server (TICKETS_MCP_URL)" and given["TICKETS_MCP_URL"].running
    # And where the environment already gives the variable, nothing is started for it
    with stand_ins_of(ROOT / "lockgate.toml", (), None, given=["TICKETS_MCP_URL"]) as none:
        assert none == {}


def test_a_workflow_whose_local_stand_ins_gives_no_server_is_named_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a workflows package whose hook returns a URL instead of a server
    package = tmp_path / "workflows" / "crm_flow"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(
        "def register(setup):\n    pass\n\n\n"
        "def local_stand_ins(dev_secrets):\n    return {'CRM_URL': 'http://127.0.0.1:1'}\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path / "workflows"))
    # When the local stack gathers the workflows' stand-ins
    with pytest.raises(StandInError) as refused:
        workflow_stand_ins(["crm_flow"], tmp_path, {})
    # Then the error names the workflow, the variable and what to give
    assert str(refused.value) == (
        "workflow crm_flow: local_stand_ins() gave 'CRM_URL' a str, not a stand-in server "
        "(a lockgate_infra.testing.RecordingApi)"
    )
