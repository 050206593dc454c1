"""Logs on the embedded stack say who spoke: each function's JSON lines carry its own name and request
id although every function shares this process, and what reaches the console or the log file is
always whole lines, whichever threads write at once.

Two tiny Powertools handlers (written under tmp_path) share one service name, as the template's
functions do; a gate in one of them holds its invocation open while the other one runs.
"""

from __future__ import annotations

import io
import json
import logging
import sys
import textwrap
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from lockgate_infra.local.console import Console, inside, one_line, routed_output
from lockgate_infra.local.stack import LocalStack

TEMPLATE = """
AWSTemplateFormatVersion: "2010-09-09"
Transform: AWS::Serverless-2016-10-31
Globals:
  Function:
    Timeout: 5
    Handler: app.handler
    Environment:
      Variables:
        POWERTOOLS_SERVICE_NAME: lockgate-logs-test
Resources:
  Alpha:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: functions/alpha/
      Environment:
        Variables:
          TOKEN: alpha-token
          TIMEOUT_SECONDS: "300"
  Beta:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: functions/beta/
      Environment:
        Variables:
          TOKEN: beta-token
          TIMEOUT_SECONDS: "900"
"""

HANDLER = """
from aws_lambda_powertools import Logger

logger = Logger()  # the same service as the other function's: one logger in this process
gate = None  # (entered, proceed): set by a test to hold an invocation open


@logger.inject_lambda_context(clear_state=True)
def handler(event, context):
    if gate is not None:
        gate[0].set()
        gate[1].wait(10)
    logger.info("{name} speaks")
    return {{}}
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "template.yaml").write_text(TEMPLATE, encoding="utf-8")
    (tmp_path / "lockgate.toml").write_text("", encoding="utf-8")
    for name in ("alpha", "beta"):
        folder = tmp_path / "functions" / name
        folder.mkdir(parents=True)
        (folder / "app.py").write_text(textwrap.dedent(HANDLER.format(name=name)), encoding="utf-8")
    return tmp_path


@contextmanager
def routed(folder: Path) -> Iterator[tuple[io.StringIO, Path]]:
    """stdout and stderr routed as `lockgate local` routes them: (the console, the log file).

    Entered in the test's body: pytest puts its own capture back on sys.stdout after fixtures run.
    """
    console, log = io.StringIO(), folder / "functions.log"
    with routed_output(Console(console), log):
        yield console, log


def _records(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line.startswith("{")]


def test_given_two_functions_logging_at_once_then_each_line_names_its_own_function_and_request(
    project: Path,
) -> None:
    with routed(project) as (console, log), LocalStack(project / "template.yaml") as stack:
        alpha = stack.load_function("Alpha")
        stack.load_function("Beta")
        entered, proceed = threading.Event(), threading.Event()
        alpha.module.gate = (entered, proceed)
        # Given Alpha's invocation started (its context is in the logger) and is still running
        first = threading.Thread(target=stack.invoke, args=("Alpha", {}, "req-alpha-1"))
        first.start()
        assert entered.wait(10)
        # When Beta is invoked meanwhile, and then Alpha logs
        stack.invoke("Beta", {}, "req-beta-1")
        proceed.set()
        first.join(10)
        alpha.module.gate = None
        stack.invoke("Alpha", {}, "req-alpha-2")
    # Then each line carries the function and the request that wrote it, and each function's
    # first invocation is its cold start
    said = {
        (r["message"], r["function_name"], r["function_request_id"], r["cold_start"]) for r in _records(log)
    }
    assert said == {
        ("alpha speaks", "lockgate-local-Alpha", "req-alpha-1", True),
        ("beta speaks", "lockgate-local-Beta", "req-beta-1", True),
        ("alpha speaks", "lockgate-local-Alpha", "req-alpha-2", False),
    }
    # And the console's one line for each names the function and the start of its request id
    shown = [line.split() for line in console.getvalue().splitlines() if "speaks" in line]
    assert [(words[1], words[3], words[-1]) for words in shown] == [
        ("Beta", "beta", "req=req-beta"),
        ("Alpha", "alpha", "req=req-alph"),
        ("Alpha", "alpha", "req=req-alph"),
    ]


def test_given_a_print_split_in_two_writes_when_another_function_logs_between_then_both_lines_stay_whole(
    tmp_path: Path,
) -> None:
    half_written, other_logged = threading.Event(), threading.Event()
    link = "[approval] alice: refund $80.00 -> http://127.0.0.1:1/approvals/ap_1?r=alice&s=abc"

    def notifier() -> None:
        # print(): the text, then its newline, in two writes (the print channel writes to stderr)
        with inside("ApprovalNotifierFunction"):
            sys.stderr.write(link)
            half_written.set()
            other_logged.wait(10)
            sys.stderr.write("\n")

    with routed(tmp_path) as (console, log):
        # Given the notifier has written its link but not yet the newline
        thread = threading.Thread(target=notifier)
        thread.start()
        assert half_written.wait(10)
        # When the worker logs a JSON line meanwhile, and the demo prints a line of its own
        with inside("AgentWorkerFunction"):
            print(json.dumps({"level": "INFO", "message": "model call", "delivery": "helpdesk#1"}))
        print("What the worker did")
        other_logged.set()
        thread.join(10)
    # Then the log file has each function's line whole, the link unbroken
    assert log.read_text(encoding="utf-8").splitlines() == [
        '{"level": "INFO", "message": "model call", "delivery": "helpdesk#1"}',
        link,
    ]
    # And the console too: the summary, the demo's own line, the link (whole, not clipped)
    lines = console.getvalue().splitlines()
    assert [line.split(" ", 1)[1] for line in lines if line != "What the worker did"] == [
        "AgentWorkerFunction      INFO    model call  delivery=helpdesk#1",
        f"ApprovalNotifierFunction {link}",
    ]
    assert "What the worker did" in lines


def test_a_json_record_shows_its_ids_and_a_metric_blob_nothing() -> None:
    record = {"level": "WARNING", "message": "tool call blocked", "tool": "refund", "cold_start": False,
              "function_request_id": "5f98112a-3a7b-44e8-bf1a-9013fa4bc7d6"}  # fmt: skip
    line = one_line("AgentWorkerFunction", json.dumps(record))
    assert line is not None
    shown = "AgentWorkerFunction      WARNING tool call blocked  tool=refund req=5f98112a"
    assert line.split(" ", 1)[1] == shown
    assert one_line("AgentWorkerFunction", json.dumps({"_aws": {}, "Delivered": [1.0]})) is None
    assert one_line("AgentWorkerFunction", "   ") is None


def test_given_two_functions_with_different_values_then_only_a_secret_read_at_each_use_is_mentioned(
    project: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Given Alpha and Beta set TIMEOUT_SECONDS (read once, at their cold start) and TOKEN differently
    caplog.set_level(logging.WARNING, "lockgate_infra.local")
    with LocalStack(project / "template.yaml") as stack:
        stack.load_function("Alpha")
        stack.load_function("Beta")
    # Then nothing is said: each read its own values when it loaded
    assert caplog.messages == []
    # But when lockgate.toml reads TOKEN as a secret at each use (env:TOKEN)
    (project / "lockgate.toml").write_text(
        '[sources.github]\nscheme = "github"\nsecrets = ["env:TOKEN"]\n', encoding="utf-8"
    )
    with LocalStack(project / "template.yaml") as stack:
        stack.load_function("Alpha")
        stack.load_function("Beta")
    # Then one line says so in words, naming both functions and never a value
    (message,) = caplog.messages
    assert message == (
        "Alpha and Beta set the secret TOKEN differently; they share this process's environment, "
        "so both now use Beta's value: give them one value to try this locally"
    )
