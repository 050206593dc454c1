"""`lockgate local status`: every poller and stand-in of a running stack, alive or stalled, what it
handled and when; a stalled poller is reported in the state file, by the command and on the console.

The small templates and handlers of test_local_stack (a queue and its worker) and test_local_streams
(a table's stream and its notifier) stand in for the real functions.
"""

from __future__ import annotations

import io
import json
import os
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from botocore.awsrequest import AWSResponse

from lockgate_infra.cli import main as cli
from lockgate_infra.local.health import STALL_SECONDS, Health
from lockgate_infra.local.run import read_local_state
from lockgate_infra.local.stack import LocalStack
from lockgate_infra.local.status import Monitor
from lockgate_infra.local.status_text import report, rows
from tests.integration import test_local_stack as queue_project
from tests.integration import test_local_streams as stream_project
from tests.support import fail_calls, local_stack_in_thread, run_cli


def _write(folder: Path, template: str, handlers: dict[str, str]) -> Path:
    (folder / "template.yaml").write_text(template, encoding="utf-8")
    (folder / "lockgate.toml").write_text("", encoding="utf-8")
    for name, code in handlers.items():
        (folder / "functions" / name).mkdir(parents=True)
        (folder / "functions" / name / "app.py").write_text(textwrap.dedent(code), encoding="utf-8")
    return folder


@pytest.fixture
def running(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[LocalStack, io.StringIO]]:
    """`lockgate local` on the queue project, in a thread; this process's CLI names its port."""
    project = _write(tmp_path, queue_project.TEMPLATE, {"receiver": queue_project.RECEIVER,
                                                        "worker": queue_project.WORKER})  # fmt: skip
    console = io.StringIO()
    template, config = project / "template.yaml", project / "lockgate.toml"
    with local_stack_in_thread(console, template_path=template, config_path=config) as stack:
        monkeypatch.setenv("LOCKGATE_LOCAL_PORT", str(stack.gateway.port))
        monkeypatch.setattr(cli, "ROOT", project)
        yield stack, console


def _status(stack: LocalStack) -> dict[str, Any]:
    state = read_local_state(stack.template_path.parent, stack.gateway.port)  # type: ignore[union-attr]
    assert state is not None
    return dict(state["status"])


def _row(status: dict[str, Any], kind: str) -> dict[str, Any]:
    (row,) = [r for r in [*status["pollers"], *status["stand_ins"]] if r["kind"] == kind]
    return row


def _until(condition: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the condition never held"
        time.sleep(0.1)


def test_given_a_running_stack_then_its_status_lists_each_poller_and_stand_in_with_what_it_handled(
    running: tuple[LocalStack, io.StringIO],
) -> None:
    stack, console = running
    # Given the stack serves: its state file names every poller and the model's stand-in, all alive
    status = _status(stack)
    queue, model = _row(status, "queue"), _row(status, "model")
    assert (queue["name"], queue["state"], queue["handled"], queue["source"]) == (
        "Worker.Work", "alive", 0, "lockgate-local-WorkQueue",
    )  # fmt: skip
    assert model["state"] == "alive" and model["url"].startswith("http://127.0.0.1:")
    assert _row(status, "schedule")["state"] == "alive"
    # And the banner showed the same rows, with the stand-in's URL
    assert "model     Messages API stand-in (demo)" in console.getvalue()
    assert model["url"] in console.getvalue()
    # When a delivery reaches the worker through the queue
    assert stack.gateway is not None
    assert queue_project.request(f"{stack.gateway.url}/webhooks/github", b"hello")[0] == 202
    _until(lambda: _row(_status(stack), "queue")["handled"] == 1)
    # Then the state file says it handled one message, and when
    queue = _row(_status(stack), "queue")
    assert queue["state"] == "alive" and queue["last_activity"] is not None
    # And `lockgate local status` prints a line for each, and exits 0
    code, out = run_cli("local", "status")
    assert code == 0, out
    lines = out.splitlines()
    assert lines[0].startswith(f"lockgate local on {stack.gateway.url} (pid {os.getpid()}")
    assert any(line.split()[:4] == ["queue", "Worker.Work", "alive", "1"] for line in lines), out
    assert any(line.split()[:2] == ["model", "Messages"] and model["url"] in line for line in lines), out
    code, out = run_cli("local", "status", "--json")
    assert code == 0 and json.loads(out)["healthy"] is True


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")  # the death it reports
def test_given_a_poller_whose_thread_died_then_it_is_reported_stalled_everywhere(
    running: tuple[LocalStack, io.StringIO],
) -> None:
    stack, console = running
    # Given the worker's poller cannot delete what it handled (its thread ends on the error)
    (poller,) = stack.pollers
    fail_calls(poller._sqs, "DeleteMessageBatch", "AccessDenied")  # its own client, as Lambda's mapping has
    # When a message arrives
    assert stack.gateway is not None
    assert queue_project.request(f"{stack.gateway.url}/webhooks/github", b"hello")[0] == 202
    _until(lambda: _row(_status(stack), "queue")["state"] == "stalled")
    # Then the state file says why
    reason = _row(_status(stack), "queue")["reason"]
    assert reason.startswith("its thread is not running (ClientError: An error occurred (AccessDenied)")
    # And `lockgate local status` shows it and exits 1
    code, out = run_cli("local", "status")
    assert code == 1
    assert "STALLED" in out and reason in out
    # And the console said so once, as it happened
    said = [line for line in console.getvalue().splitlines() if "is stalled" in line]
    assert len(said) == 1 and said[0].endswith(
        f"queue Worker.Work is stalled: {reason} (`lockgate local status` shows every poller)"
    )


def test_given_a_stream_reader_that_sees_nothing_while_records_wait_then_it_is_stalled(
    tmp_path: Path,
) -> None:
    project = _write(tmp_path, stream_project.TEMPLATE, {"notifier": stream_project.HANDLER})
    with LocalStack(project / "template.yaml") as stack:
        stack.start_pollers(wait_seconds=0)
        (poller,) = stack.stream_pollers
        clock = _Clock()
        poller.health = Health(clock)
        # Given the poller's own reader gets nothing back (as a stranded shard iterator did), from
        # its next read on: a read already on its way could still bring back what is written next
        blind = poller._streams.meta.events  # its own client: a fresh reader still sees the stream
        read_blind = threading.Event()

        def nothing_new(params: dict[str, Any], **kwargs: Any) -> tuple[AWSResponse, dict[str, Any]]:
            read_blind.set()
            return _nothing_new(params, **kwargs)

        blind.register("before-call.dynamodbstreams.GetRecords", nothing_new)
        assert read_blind.wait(10), "the poller did not read its stream"
        monitor = Monitor(stack)
        # When a proposal is written to the table
        table = stack.resources["ProposalsTable"]
        stack.client("dynamodb").put_item(TableName=table, Item={"id": {"S": "p-1"}})
        # Then the record is seen waiting, and once it has waited longer than the limit untaken, stalled
        row = _stream_row(monitor)
        assert (row["state"], row["waiting"]) == ("alive", 1)
        clock.now += STALL_SECONDS + 1
        row = _stream_row(monitor)
        assert (row["state"], row["reason"]) == ("stalled", "1 record waiting for 11 s and none taken")
        # And when the reader sees the stream again, it takes the record and is alive
        blind.unregister("before-call.dynamodbstreams.GetRecords", nothing_new)
        assert stack.drain(timeout=20)
        row = _stream_row(monitor)
        assert (row["state"], row["waiting"], row["handled"]) == ("alive", 0, 1)


def _nothing_new(params: dict[str, Any], **_: Any) -> tuple[AWSResponse, dict[str, Any]]:
    """GetRecords answered, before it is sent, with no records and the same iterator."""
    iterator = json.loads(params["body"])["ShardIterator"]
    return AWSResponse("", 200, {}, None), {"Records": [], "NextShardIterator": iterator}


def _stream_row(monitor: Monitor) -> dict[str, Any]:
    (row,) = monitor.status()["pollers"]
    return dict(row)


class _Clock:
    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


def test_without_a_running_stack_the_status_is_one_line_and_exit_2(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cli, "ROOT", tmp_path)
    monkeypatch.delenv("LOCKGATE_LOCAL_PORT", raising=False)
    assert cli.main(["local", "status"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        "lockgate: no local stack is running; start one with `lockgate local` (in another terminal)\n"
    )


def test_given_a_stack_that_stopped_refreshing_its_status_then_it_is_reported_and_exit_1() -> None:
    status = {"updated_at": 1_000.0, "pollers": [], "stand_ins": []}
    state = {"gateway_url": "http://127.0.0.1:8787", "pid": 1, "started_at": "x", "status": status}
    out = io.StringIO()
    assert report(state, out, now=1_000.0 + 5) == 0
    out = io.StringIO()
    assert report(state, out, now=1_000.0 + 60) == 1
    assert out.getvalue().splitlines()[-1] == (
        "the stack has not refreshed its status for 60 s: it may be hung (Ctrl-C it and start it again)"
    )


def test_given_two_stacks_then_status_asks_which_and_shows_the_one_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from lockgate_infra.local.run import state_path

    # Given two stacks described in one checkout (this process stands in for both)
    for port in (8787, 8788):
        row = {"kind": "queue", "name": f"Worker.Work{port}", "source": "q", "state": "alive", "reason": "",
               "busy": False, "handled": port - 8787, "last_activity": None}  # fmt: skip
        state = {"pid": os.getpid(), "port": port, "gateway_url": f"http://127.0.0.1:{port}", "resources": {},
                 "endpoint_url": "http://127.0.0.1:1", "started_at": "2026-12-01T00:00:00Z",
                 "status": {"updated_at": time.time(), "pollers": [row], "stand_ins": []}}  # fmt: skip
        state_path(tmp_path, port).parent.mkdir(parents=True, exist_ok=True)
        state_path(tmp_path, port).write_text(json.dumps(state), encoding="utf-8")
    monkeypatch.setattr(cli, "ROOT", tmp_path)
    monkeypatch.delenv("LOCKGATE_LOCAL_PORT", raising=False)
    # Then naming none is one line saying how to choose, exit 2
    assert run_cli("local", "status") == (2, "")
    assert capsys.readouterr().err == (
        "lockgate: 2 local stacks are running (gateway ports 8787, 8788): say which with --local-port\n"
    )
    # And naming one shows that one
    code, out = run_cli("local", "status", "--local-port", "8788")
    assert code == 0
    assert out.splitlines()[0].startswith("lockgate local on http://127.0.0.1:8788 ")
    assert out.splitlines()[1].split()[:4] == ["queue", "Worker.Work8788", "alive", "1"]


def test_given_a_stand_in_name_longer_than_the_column_then_every_row_keeps_its_columns_aligned() -> None:
    long_name = "Messages API stand-in (demo, triage.model:scripted_model, tickets.model:scripted_model)"
    row = {"kind": "queue", "name": "AgentWorkerFunction.Inbox", "state": "alive", "handled": 3}
    status = {"pollers": [row], "stand_ins": [{**row, "kind": "model", "name": long_name, "handled": 7}]}
    lines = rows(status)
    # Then the state column starts at the same place on both rows, after the longest name
    assert [line.index("alive") for line in lines] == [2 + 9 + 1 + len(long_name) + 1] * 2
