"""`lockgate runs trace ID`: a delivery's waterfall from a spans file, and one-line errors."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import pytest

from lockgate_infra.cli.main import main
from lockgate_infra.local.spans import SpanRecord

T0 = 1_796_000_000.0
TRACE, OTHER = "a" * 32, "b" * 32


def span(
    name: str, span_id: str, parent: str | None, start: float, seconds: float, **attributes: object
) -> SpanRecord:
    return SpanRecord(
        TRACE, span_id, parent, name, "internal", T0 + start, T0 + start + seconds, "ok", dict(attributes)
    )


def spans_file(tmp_path: Path) -> Path:
    """A refund's trace as the local stack writes it, a later duplicate's receipt (a trace of its own),
    and the same id stored by a stack started the day before."""
    records = [
        span("receive helpdesk", "1" * 16, None, 0, 0.02, **{"lockgate.delivery.id": "helpdesk#m1"}),
        span(
            "process email",
            "2" * 16,
            "1" * 16,
            0.1,
            1.2,
            **{"lockgate.delivery.id": "helpdesk#m1", "lockgate.outcome": "support-inbox: completed"},
        ),  # fmt: skip
        span(
            "invoke_agent support-inbox",
            "3" * 16,
            "2" * 16,
            0.1,
            1.1,
            **{
                "gen_ai.operation.name": "invoke_agent",
                "lockgate.run.status": "completed",
                "lockgate.run.model_calls": 2,
                "lockgate.cost_usd": 0.0123,
            },
        ),  # fmt: skip
        span(
            "chat claude-sonnet-5-5",
            "4" * 16,
            "3" * 16,
            0.2,
            0.3,
            **{
                "gen_ai.operation.name": "chat",
                "lockgate.task": "support-inbox",
                "gen_ai.usage.input_tokens": 1600,
                "gen_ai.usage.output_tokens": 40,
                "gen_ai.usage.cache_read.input_tokens": 1500,
                "gen_ai.response.finish_reasons": ["tool_use"],
                "lockgate.cost_usd": 0.0015,
            },
        ),  # fmt: skip
        span(
            "execute_tool refund_order",
            "5" * 16,
            "3" * 16,
            0.6,
            0.05,
            **{
                "gen_ai.operation.name": "execute_tool",
                "lockgate.guard.check": "taint",
                "lockgate.tool.outcome": "proposed",
                "lockgate.approval.id": "ap_1",
            },
        ),  # fmt: skip
        span(
            "approval decision",
            "6" * 16,
            "5" * 16,
            3600,
            0.04,
            **{
                "lockgate.approval.reviewer": "alice",
                "lockgate.approval.verdict": "approve",
                "lockgate.approval.via": "link",
                "lockgate.approval.outcome": "approved",
            },
        ),  # fmt: skip
        span(
            "execute_tool refund_order",
            "7" * 16,
            "6" * 16,
            3600.2,
            0.1,
            **{
                "gen_ai.operation.name": "execute_tool",
                "lockgate.ledger.state": "SUCCEEDED",
                "lockgate.approval.approvers": ["alice"],
            },
        ),  # fmt: skip
    ]
    duplicate = SpanRecord(OTHER, "8" * 16, None, "receive helpdesk", "internal", T0 + 50, T0 + 50.01, "ok",
                           {"lockgate.delivery.id": "helpdesk#m1", "lockgate.duplicate": True})  # fmt: skip
    yesterday = T0 - 86_400  # a stack started the day before stored the same id
    earlier = SpanRecord("c" * 32, "9" * 16, None, "receive helpdesk", "internal", yesterday,
                         yesterday + 1, "ok", {"lockgate.delivery.id": "helpdesk#m1"})  # fmt: skip
    path = tmp_path / "spans.jsonl"
    lines = [json.dumps(asdict(r)) for r in [earlier, duplicate, *records]]
    path.write_text("\n".join([*lines, "not a span"]) + "\n", encoding="utf-8")
    return path


def test_the_trace_prints_every_hop_under_the_one_that_carried_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a spans file with the refund's trace and a duplicate receipt's own trace
    path = spans_file(tmp_path)
    # When the operator asks for the delivery's trace
    code = main(["runs", "trace", "helpdesk#m1", "--spans", str(path)])
    # Then the first receipt's trace is printed as a waterfall, children indented under parents
    assert code == 0
    assert capsys.readouterr().out.splitlines() == [
        f"trace {TRACE}  helpdesk#m1  7 spans, 3600.3s from the first to the last",
        "   +0.000s   0.020s  receive helpdesk                             helpdesk#m1",
        "   +0.100s   1.200s    process email                              helpdesk#m1 · support-inbox: completed",  # noqa: E501 - the lines as printed
        "   +0.100s   1.100s      invoke_agent support-inbox               completed · 2 model calls · $0.0123",  # noqa: E501 - the lines as printed
        "   +0.200s   0.300s        chat claude-sonnet-5-5                 1600 in (1500 cache read) · 40 out · tool_use · $0.001500",  # noqa: E501 - the lines as printed
        "   +0.600s   0.050s        execute_tool refund_order              taint · proposed · asked a person (ap_1)",  # noqa: E501 - the lines as printed
        "  +3600.0s   0.040s          approval decision                    alice approve via link: approved",
        "  +3600.2s   0.100s            execute_tool refund_order          SUCCEEDED · approved by alice",
    ]


def test_json_prints_the_spans_in_start_order(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["runs", "trace", "helpdesk#m1", "--spans", str(spans_file(tmp_path)), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert [s["span_id"][0] for s in printed] == list("1234567") and {s["trace_id"] for s in printed} == {
        TRACE
    }


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["runs", "trace", "helpdesk#nope"], "lockgate: no trace of helpdesk#nope in "),
        (
            ["runs", "trace", "helpdesk#m1", "--spans", "/nope/spans.jsonl"],
            "lockgate: no spans at /nope/spans.jsonl: run `lockgate local`",
        ),
        (
            ["runs", "trace", "helpdesk#m1", "--stack", "lockgate"],
            "lockgate: traces of a deployed stack are in CloudWatch",
        ),
    ],
)
def test_nothing_to_show_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], says: str
) -> None:
    argv = [*argv, "--spans", str(spans_file(tmp_path))] if "--spans" not in argv else argv
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(says) and err.count("\n") == 1
