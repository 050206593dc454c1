"""lockgate.tracing: spans through OpenTelemetry's API, carried across hops as W3C traceparents."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from lockgate import tracing
from lockgate_infra.local.spans import install

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("carried", "trace_id"),
    [
        ("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "4bf92f3577b34da6a3ce929d0e0e4736"),
        ("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", "4bf92f3577b34da6a3ce929d0e0e4736"),
        ("00-00000000000000000000000000000000-00f067aa0ba902b7-01", None),  # the invalid trace id
        ("00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01", None),  # one digit short
        ("00-4bf92f3577b34da6a3ce929d0e0e47zz-00f067aa0ba902b7-01", None),  # not hex
        ("4bf92f3577b34da6a3ce929d0e0e4736", None),
        ("", None),
        (None, None),
    ],
)
def test_a_carried_traceparent_gives_its_trace_id_or_none(carried: str | None, trace_id: str | None) -> None:
    assert tracing.trace_id(carried) == trace_id


def test_a_span_under_a_carried_parent_joins_its_trace_and_links_the_invocation() -> None:
    # Given spans collected in this process, and a traceparent an earlier hop stored
    spans = install()
    carried = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    # When a hop runs inside its own invocation's span and starts its span under the carried one
    attributes = {"a": 1, "b": None}
    with (
        tracing.span("invocation"),
        tracing.span("process email", kind="consumer", parent=carried, attributes=attributes),
    ):
        tracing.annotate({"lockgate.outcome": "done", "gone": None})
        tracing.event("retried", {"attempt": 2})
        inner = tracing.traceparent()
    # Then it is in the carried trace, under the carried span, linked to the invocation's trace
    (hop,) = [s for s in spans.spans() if s.name == "process email" and s.parent_id == "00f067aa0ba902b7"]
    (invocation,) = [s for s in spans.spans() if s.name == "invocation" and s.end >= hop.end]
    assert hop.trace_id == "4bf92f3577b34da6a3ce929d0e0e4736" and hop.kind == "consumer"
    assert hop.links == [invocation.trace_id]
    assert hop.attributes == {"a": 1, "lockgate.outcome": "done"}  # None is "leave it out"
    assert hop.events[0]["name"] == "retried" and hop.events[0]["attributes"] == {"attempt": 2}
    # And what it would carry on names itself in that trace
    assert inner is not None and inner.startswith(f"00-{hop.trace_id}-{hop.span_id}-")


def test_an_exception_marks_the_span_as_an_error_by_its_type_only_and_goes_on() -> None:
    # Given a hop that fails with a message quoting what a customer wrote
    spans = install()
    with pytest.raises(ValueError, match="arrived broken"), tracing.span("failing hop"):
        raise ValueError("could not parse: My order A-2001 arrived broken")
    # Then its span is an error by type; the message and traceback stay in the logs
    (failed,) = [s for s in spans.spans() if s.name == "failing hop"][-1:]
    assert (failed.status, failed.attributes, failed.events) == (
        "error: ValueError",
        {"error.type": "ValueError"},
        [],
    )


def test_a_minted_traceparent_is_a_new_sampled_trace_each_time() -> None:
    first, second = tracing.mint(), tracing.mint()
    assert tracing.trace_id(first) and tracing.trace_id(second) != tracing.trace_id(first)
    assert first.startswith("00-") and first.endswith("-01")  # sampled: traced hops after it record


def test_an_unknown_span_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="span kind must be one of"):
        tracing.span("x", kind="sideways")


def test_with_no_opentelemetry_loaded_nothing_is_imported_and_nothing_is_carried() -> None:
    # Given a fresh interpreter where nothing loaded OpenTelemetry (no ADOT wrapper, no local stack)
    code = (
        "import sys\n"
        f"sys.path[:0] = [{str(ROOT / 'layers' / 'core')!r}]\n"
        "from lockgate import tracing\n"
        "with tracing.span('receive github', attributes={'a': 1}):\n"
        "    tracing.annotate({'b': 2}); tracing.event('e')\n"
        "    carried = tracing.traceparent()\n"
        "print(carried, tracing.enabled(), any(m.startswith('opentelemetry') for m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    # Then spans are no-ops that import nothing, and no traceparent is written anywhere
    assert out.stdout.split() == ["None", "False", "False"]


def test_no_function_and_no_lock_brings_the_xray_sdk() -> None:
    sources = [*ROOT.glob("functions/*/*.py"), *(ROOT / "layers" / "core" / "lockgate").rglob("*.py")]
    assert not [p for p in sources if "aws_xray_sdk" in p.read_text() or "Tracer(" in p.read_text()]
    locks = [ROOT / "layers" / "core" / "requirements.txt", *ROOT.glob("functions/*/requirements.txt")]
    assert not [p for p in locks if "aws-xray-sdk" in p.read_text()]
