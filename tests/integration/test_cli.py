"""The `lockgate` CLI against a running local stack, and the demo end to end."""

from __future__ import annotations

import io
import json
import time
from contextlib import redirect_stderr
from pathlib import Path

import pytest

from lockgate.config import load_config
from lockgate.inbox.models import Status
from lockgate.inbox.store import InboxStore
from lockgate_infra.cli import main as cli
from lockgate_infra.docsite.blocks import output_matches
from lockgate_infra.local.demo import run_demo
from tests.support import local_stack_in_thread, run_cli

ROOT = Path(__file__).resolve().parents[2]


def test_demo_runs_every_case_as_expected() -> None:
    out = io.StringIO()
    # When the demo runs on a fresh embedded stack
    code = run_demo(out=out, model="demo")
    text = out.getvalue()
    # Then it reports every reply and outcome as expected, including the refusals
    assert code == 0, text
    assert "401  forged GitHub push" in text
    assert "stale, not applied" in text
    assert "FAILED partner#p-102" in text
    # and the agent answered both customers, while the refund after reading an email waits for a person
    assert "to ada@example.com: Re: Where is my order A-1042?" in text
    assert "refund $80.00 on order A-2001: BLOCKED (taint" in text
    assert "Refunds recorded: 0" in text
    # and a person approves it through the page: it runs once, a second click changes nothing
    assert "200  click Approve (POST)                     Approved" in text
    assert "409  click Approve again                      Already approved" in text
    assert "refunds recorded after approval: [('A-2001', '80.00')]" in text
    assert "then emailed grace@example.com: Good news: our team approved your request" in text
    # and the ticket was read through the MCP server at once; its credit and comment waited for a person,
    # then each ran once there, under its key, by the server's own record
    assert 'get_ticket on tickets: {"ticket_id":"T-1"}: ran' in text
    assert "credit 1500 cents on ticket T-1: BLOCKED (taint: this run read untrusted content" in text
    assert "Ticket changes made: 0 (the credit and the comment on T-1 wait for a person)" in text
    assert text.count("alice's link: opens it (200), clicks Approve (200 Approved)") == 2
    assert "calls received: get_ticket x1  issue_credit x1  add_comment x1" in text
    assert "E-1  issue_credit  T-1  credited 1500 cents" in text and "E-2  add_comment   T-1" in text
    assert text.count("(acted 1 time)") == 2
    assert "Demo finished: every reply and outcome was as expected." in text
    # And the links the notifier sent are in a section of their own, each whole on its line, after the
    # agent's tables: none printed in the middle of them
    lines = text.splitlines()
    section = lines.index("Approval links sent (one per reviewer; deployed, they go by email or Slack)")
    assert section > lines.index("Refunds recorded: 0 (the A-2001 refund waits for a person)")
    assert [line.split(":")[0] for line in lines[section + 1 : section + 5 : 2]] == ["  alice", "  bob"]
    assert all(line.startswith("    http://127.0.0.1:") and " " not in line.strip()
               for line in lines[section + 2 : section + 5 : 2])  # fmt: skip
    assert "[approval]" not in text
    # And Getting started shows this very output (ports and the approval link differ), and the README
    # an excerpt of it ("..." for lines left out, "…" for text left out of a line)
    assert _shown(text) == _shown(_shown_demo("docs/getting-started.md"))
    assert output_matches(tuple(_shown(_shown_demo("README.md"))), _shown(text))


def _shown_demo(page: str) -> str:
    """A page's quick-start demo output: its three code blocks, in order."""
    readme = (ROOT / page).read_text(encoding="utf-8")
    section = readme[readme.index("`make demo` starts") : readme.index("The demo exits non-zero")]
    return "\n".join(section.split("```")[1::2])


def _shown(text: str) -> list[str]:
    """The lines, with what varies per run masked: ports, and the approval link's id and query."""
    import re

    masked = re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT", text)
    masked = re.sub(r"/approvals/ap_[0-9a-f]+\?\S+", "/approvals/LINK", masked)
    return [line.rstrip() for line in masked.splitlines() if line.strip()]


@pytest.fixture
def running_stack(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """`lockgate local` in a thread; this process's CLI calls name its port (others may run theirs)."""
    with local_stack_in_thread() as stack:
        monkeypatch.setenv("LOCKGATE_LOCAL_PORT", str(stack.gateway.port))
        yield stack


def test_inbox_commands_against_a_running_local_stack(running_stack) -> None:  # type: ignore[no-untyped-def]
    stack = running_stack
    store = InboxStore(stack.client("dynamodb"), stack.resources["InboxTable"])
    # Given a partner delivery that failed for good (malformed), sent through the real gateway
    from lockgate.webhooks.signing import sign
    from lockgate_infra.local.demo import _post

    config = load_config(ROOT / "lockgate.toml")
    secret = stack.client("secretsmanager").get_secret_value(SecretId="lockgate/webhooks/partner")
    body = b'{"type":"order.updated"}'
    headers = sign(
        config.sources["partner"], secret["SecretString"], body, int(time.time()), delivery_id="cli-1"
    )
    status, _ = _post(f"{stack.gateway.url}/webhooks/partner", body, headers)
    assert status == 200
    stack.drain(timeout=20)
    assert store.get("partner#cli-1").status is Status.FAILED
    # When the operator asks for the status as JSON
    code, out = run_cli("inbox", "status", "--json")
    # Then the failure is listed with its error
    assert code == 0
    summary = json.loads(out)
    assert summary["counts"]["failed"] == 1
    assert summary["failed"][0]["id"] == "partner#cli-1"
    assert "bad delivery" in summary["failed"][0]["error"]
    assert summary["dead_letters"] == 1
    # And `show` prints the record without the body
    code, out = run_cli("inbox", "show", "partner#cli-1")
    record = json.loads(out)
    assert record["status"] == "failed" and record["body"].startswith(f"{len(body)} bytes")
    # And `retry` sends it round again with fresh attempts (it fails again: still malformed)
    code, out = run_cli("inbox", "retry", "partner#cli-1")
    assert code == 0 and "re-queued partner#cli-1" in out
    stack.drain(timeout=20)
    row = store.get("partner#cli-1")
    assert row.status is Status.FAILED and row.attempts == 1
    # An unknown delivery cannot be retried: a clear message and exit code 2
    assert run_cli("inbox", "retry", "partner#no-such")[0] == 2


def test_inbox_commands_without_a_stack_explain_what_to_do(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Another test's `lockgate local` may be running in this checkout: this test must not see it.
    monkeypatch.delenv("LOCKGATE_LOCAL_PORT", raising=False)
    monkeypatch.setattr("lockgate_infra.local.run.read_local_state", lambda *args, **kwargs: None)
    code = cli.main(["inbox", "status"])
    assert code == 2
    assert "lockgate local" in capsys.readouterr().err


def test_inbox_status_against_a_deployed_stack_by_name(aws: object) -> None:
    # Given a CloudFormation stack (on moto) holding the inbox resources under the template's logical ids
    template = {
        "Resources": {
            "InboxTable": {
                "Type": "AWS::DynamoDB::Table",
                "Properties": {
                    "BillingMode": "PAY_PER_REQUEST",
                    "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
                    "AttributeDefinitions": [
                        {"AttributeName": "pk", "AttributeType": "S"},
                        {"AttributeName": "status", "AttributeType": "S"},
                        {"AttributeName": "received_at", "AttributeType": "N"},
                        {"AttributeName": "index_shard", "AttributeType": "N"},
                    ],
                    "GlobalSecondaryIndexes": [
                        {
                            "IndexName": "by-status-sharded",
                            "KeySchema": [
                                {"AttributeName": "status", "KeyType": "HASH"},
                                {"AttributeName": "index_shard", "KeyType": "HASH"},
                                {"AttributeName": "received_at", "KeyType": "RANGE"},
                            ],
                            "Projection": {"ProjectionType": "ALL"},
                        }
                    ],
                },
            },
            "InboxQueue": {"Type": "AWS::SQS::Queue"},
            "InboxDLQ": {"Type": "AWS::SQS::Queue"},
        }
    }
    import boto3

    boto3.client("cloudformation", region_name="us-east-1").create_stack(
        StackName="lockgate-test", TemplateBody=json.dumps(template)
    )
    # When the operator asks by stack name
    code, out = run_cli("inbox", "status", "--json", "--stack", "lockgate-test", "--region", "us-east-1")
    # Then the CLI found the stack's table and queues through CloudFormation
    assert code == 0, out
    assert json.loads(out)["counts"] == {"received": 0, "processing": 0, "done": 0, "failed": 0}
    assert run_cli("inbox", "status", "--stack", "no-such-stack", "--region", "us-east-1")[0] == 2


def test_send_test_reaches_the_inbox_for_every_source_and_runs_no_task(running_stack) -> None:  # type: ignore[no-untyped-def]
    stack = running_stack
    store = InboxStore(stack.client("dynamodb"), stack.resources["InboxTable"])
    config = load_config(ROOT / "lockgate.toml")
    for source in config.sources:
        # When the operator sends each source a signed test delivery
        code, out = run_cli("inbox", "send-test", source)
        # Then the gateway accepted it, and the worker stored and processed it without a task
        assert code == 0, out
        assert f"/webhooks/{source} -> 200" in out
        stored = out.strip().splitlines()[-1]
        assert stored.startswith(f"stored {source}#") and ": done (test delivery from" in stored, out
        pk = stored.split()[1].rstrip(":")
        assert store.get(pk).outcome.startswith(f"test delivery from {source}")  # type: ignore[union-attr]
    # and no run was recorded for any of them: no model was called, nothing was done
    code, out = run_cli("runs", "list")
    assert code == 0 and "lockgate-test" not in out


ISSUE = {
    "action": "opened",
    "repository": {"full_name": "acme/app"},
    "issue": {
        "number": 14,
        "title": "Same problem again",
        "body": "Duplicate of #12",
        "user": {"login": "sam"},
    },
}


def test_an_event_sent_from_the_command_line_runs_its_task_and_a_person_approves_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Given lockgate local with the demo model for the shop and triage's scripted model for triage
    with local_stack_in_thread(model=["demo", "triage.model:scripted_model"]) as stack:
        monkeypatch.setenv("LOCKGATE_LOCAL_PORT", str(stack.gateway.port))
        event = tmp_path / "issue.json"
        event.write_text(json.dumps(ISSUE), encoding="utf-8")
        # When an opened issue is sent, signed as GitHub signs it
        code, out = run_cli("inbox", "send", "github", f"@{event}", "--event", "issues", "--id", "gh-14")
        # Then its task ran to the end, and closing the issue waits for a person
        assert code == 0, out
        assert out.splitlines()[-1] == "stored github#gh-14: done (triage: completed: Triaged acme/app#14.)"
        code, ids = run_cli("approvals", "list", "--ids", "--task", "triage")
        (approval_id,) = ids.split()
        assert run_cli("approvals", "list", "--ids", "--task", "support-inbox") == (0, "")
        # And once alice approves (waiting for the worker to act on it), it ran exactly once
        code, approved = run_cli("approvals", "approve", approval_id, "--as", "alice", "--yes", "--wait")
        assert code == 0
        assert approved.splitlines()[-1].startswith("then: close acme/app#14: SUCCEEDED (approved by alice")
        code, shown = run_cli("runs", "show", "github#gh-14")
        assert "close acme/app#14: approved by alice" in shown and "ran: SUCCEEDED" in shown


def test_a_body_that_is_not_json_is_one_line_and_sends_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    from lockgate_infra.cli.main import main

    with local_stack_in_thread() as stack:
        code = main(
            [
                "inbox",
                "send",
                "github",
                "{not json",
                "--event",
                "issues",
                "--local-port",
                str(stack.gateway.port),
            ]
        )
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1
        assert "the body is not JSON" in err and "give a JSON object, or @FILE" in err
        assert stack.client("dynamodb").scan(TableName=stack.resources["InboxTable"])["Count"] == 0


def test_send_test_says_when_the_stack_reads_another_secret(running_stack) -> None:  # type: ignore[no-untyped-def]
    # Given the receiver has cached GitHub's secret, and the stored one then changes
    assert run_cli("inbox", "send-test", "github")[0] == 0
    stack = running_stack
    stack.client("secretsmanager").put_secret_value(
        SecretId="lockgate/webhooks/github", SecretString="changed"
    )
    # When a test delivery is signed with the new value
    err = io.StringIO()
    with redirect_stderr(err):
        code, out = run_cli("inbox", "send-test", "github", "--no-wait")
    # Then the stack refuses it and the operator is told why, in one line
    assert code == 1
    assert "-> 401" in out
    assert err.getvalue() == (
        "lockgate: the stack did not accept the delivery (401): "
        "the stored secret differs from what the stack reads\n"
    )
