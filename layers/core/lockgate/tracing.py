"""One trace per delivery, through OpenTelemetry's API, in the GenAI semantic conventions.

Spans cost nothing unless a tracing SDK is loaded. Deployed, the ADOT Lambda layer's wrapper loads
and configures one before the handler is imported; the local stack and the tests install their own
(``lockgate_infra.local.spans``). Where none is loaded this module never imports OpenTelemetry, so
the receiver's cold start does not pay for it (``benchmarks/cold_start.py``): with no SDK a span
would record nothing anyway.

A hop that is not a call (the inbox item the worker leases, a proposal a person answers hours
later, the decision's inbox event) carries its span's W3C ``traceparent`` in the item it writes;
the next hop starts its span under it and links the invocation it runs in, so the whole story of a
delivery, from the webhook to the executed action, is one trace.

Attributes carry names, ids, counts, prices and outcomes: never a prompt, a message, an email's
text, a body or a secret.
"""

from __future__ import annotations

import secrets
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

AttributeValue = str | int | float | bool | Sequence[str] | None
Attributes = Mapping[str, AttributeValue]

TRACER_NAME = "lockgate"
_KINDS = ("internal", "server", "client", "producer", "consumer")


def enabled() -> bool:
    """Whether an OpenTelemetry API is loaded in this process (by a tracing SDK or its wrapper)."""
    return "opentelemetry.trace" in sys.modules


def span(
    name: str,
    *,
    kind: str = "internal",
    parent: str | None = None,
    attributes: Attributes | None = None,
) -> AbstractContextManager[Any]:
    """A span around the block, current inside it; under ``parent`` (a carried ``traceparent``) if given.

    Under a carried parent, the context the code runs in (the Lambda invocation's span) is linked,
    so the invocation and the delivery each show the other. An exception leaving the block marks
    the span as an error with its type only (its message and traceback can quote anything, so
    they stay in the logs) and is re-raised.
    """
    if kind not in _KINDS:
        raise ValueError(f"span kind must be one of {', '.join(_KINDS)}, not {kind!r}")
    if not enabled():
        return nullcontext()
    return _otel_span(name, kind, parent, attributes or {})


def tool_span(tool: str, attributes: Attributes) -> AbstractContextManager[Any]:
    """An ``execute_tool {tool}`` span (GenAI conventions), with ``attributes`` besides the tool's."""
    return span(
        f"execute_tool {tool}",
        attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool, **attributes},
    )


def annotate(attributes: Attributes) -> None:
    """Set attributes on the current span (``None`` values are left out)."""
    if not enabled():
        return
    from opentelemetry import trace

    current = trace.get_current_span()
    if current.is_recording():
        current.set_attributes(_clean(attributes))


def event(name: str, attributes: Attributes | None = None) -> None:
    """Record a moment on the current span (a retried model attempt, a refused decision)."""
    if not enabled():
        return
    from opentelemetry import trace

    current = trace.get_current_span()
    if current.is_recording():
        current.add_event(name, _clean(attributes or {}))


def traceparent() -> str | None:
    """The current span as a W3C ``traceparent``, to carry across a hop; None when nothing is traced."""
    if not enabled():
        return None
    from opentelemetry import trace

    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return None
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"


def mint() -> str:
    """A new, sampled ``traceparent`` for a hop that is not traced itself (the receiver, deployed):
    the hops after it, traced, join the one trace it names. Random ids; no OpenTelemetry needed."""
    return f"00-{secrets.token_hex(16)}-{secrets.token_hex(8)}-01"


def trace_id(carried: str | None) -> str | None:
    """The 32-hex trace id inside a ``traceparent`` (None if it is not one)."""
    parts = (carried or "").split("-")
    if len(parts) != 4 or len(parts[1]) != 32 or len(parts[2]) != 16:
        return None
    try:
        int(parts[1], 16), int(parts[2], 16)
    except ValueError:
        return None
    return parts[1] if parts[1].strip("0") else None


@contextmanager
def _otel_span(name: str, kind: str, parent: str | None, attributes: Attributes) -> Iterator[Any]:
    from opentelemetry import trace
    from opentelemetry.trace import (
        Link,
        NonRecordingSpan,
        SpanContext,
        SpanKind,
        Status,
        StatusCode,
        TraceFlags,
    )

    context, links = None, []
    carried = trace_id(parent)
    if carried is not None and parent is not None:
        _, _, span_id, flags = parent.split("-")
        remote = SpanContext(
            int(carried, 16), int(span_id, 16), is_remote=True, trace_flags=TraceFlags(int(flags[:2], 16))
        )
        here = trace.get_current_span().get_span_context()
        if here.is_valid and here.trace_id != remote.trace_id:
            links.append(Link(here, {"lockgate.link": "invocation"}))
        context = trace.set_span_in_context(NonRecordingSpan(remote))
    tracer = trace.get_tracer(TRACER_NAME)
    with tracer.start_as_current_span(
        name,
        context=context,
        kind=SpanKind[kind.upper()],
        links=links,
        attributes=_clean(attributes),
        record_exception=False,
        set_status_on_exception=False,
    ) as current:
        try:
            yield current
        except BaseException as exc:
            current.set_attribute("error.type", type(exc).__name__)
            current.set_status(Status(StatusCode.ERROR, type(exc).__name__))
            raise


def _clean(attributes: Attributes) -> dict[str, Any]:
    """OpenTelemetry takes str, bool, int, float and sequences of them; None means "leave it out"."""
    clean: dict[str, Any] = {}
    for key, value in attributes.items():
        if value is None:
            continue
        clean[key] = list(value) if isinstance(value, (list, tuple)) else value
    return clean
