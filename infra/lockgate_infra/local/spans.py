"""The local stack's spans: OpenTelemetry's SDK in process, every finished span kept as a plain record.

Deployed, the ADOT Lambda layer exports the functions' spans to X-Ray. Locally there is no
collector and no Docker: the stack installs the SDK in its own process (the handlers run there),
keeps the latest spans in memory (the test kit reads them) and appends each to a JSON-lines file
when given one (``lockgate local`` writes ``.lockgate/spans.jsonl``, which ``lockgate runs trace``
reads). OpenTelemetry allows one tracer provider per process: it is installed once; a later stack
points the same collector at its own file.
"""

from __future__ import annotations

import collections
import json
import threading
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

KEPT_IN_MEMORY = 20_000  # the newest spans a process keeps for the test kit
ROTATE_BYTES = 50 * 1024 * 1024  # a spans file past this is moved to spans.jsonl.1 at the next start
DELIVERY = "lockgate.delivery.id"


@dataclass(frozen=True)
class SpanRecord:
    """One finished span as the local stack keeps it (times in epoch seconds)."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    kind: str
    start: float
    end: float
    status: str  # "ok", "unset" or "error: <description>"
    attributes: dict[str, Any] = field(default_factory=dict)
    links: list[str] = field(default_factory=list)  # trace ids this span links to
    events: list[dict[str, Any]] = field(default_factory=list)

    @property
    def seconds(self) -> float:
        """How long the span lasted."""
        return max(0.0, self.end - self.start)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SpanRecord:
        """From one line of the spans file."""
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})


class SpanLog(SpanExporter):
    """An OpenTelemetry span exporter that keeps records in memory and (optionally) in a file."""

    def __init__(self) -> None:
        self.path: Path | None = None
        self._kept: collections.deque[SpanRecord] = collections.deque(maxlen=KEPT_IN_MEMORY)
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Keep each finished span (called by the SDK's span processor)."""
        records = [_record(span) for span in spans]
        with self._lock:
            self._kept.extend(records)
            if self.path is not None:
                with self.path.open("a", encoding="utf-8") as out:
                    out.writelines(json.dumps(asdict(r), default=str) + "\n" for r in records)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        """Nothing to release: the file is opened per export."""

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Spans are written as they end."""
        return True

    def spans(self) -> list[SpanRecord]:
        """The spans kept in memory, oldest first."""
        with self._lock:
            return list(self._kept)


_installed: list[SpanLog] = []  # the one collector of this process, once installed
_install_lock = threading.Lock()


def install(path: Path | None = None) -> SpanLog:
    """Collect this process's spans (once per process) and append them to ``path`` from now on."""
    with _install_lock:
        if not _installed:
            _installed.append(_new_provider())
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            if path.exists() and path.stat().st_size > ROTATE_BYTES:
                path.replace(path.with_name(path.name + ".1"))
        _installed[0].path = path
        return _installed[0]


def _new_provider() -> SpanLog:
    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    log = SpanLog()
    current = trace.get_tracer_provider()
    if isinstance(current, TracerProvider):  # someone installed an SDK already: add to theirs
        current.add_span_processor(SimpleSpanProcessor(log))
        return log
    provider = TracerProvider(resource=Resource.create({"service.name": "lockgate-local"}))
    provider.add_span_processor(SimpleSpanProcessor(log))
    trace.set_tracer_provider(provider)
    return log


def spans_file(root: str | Path) -> Path:
    """Where the local stacks of a repository append their spans (``lockgate runs trace`` reads it)."""
    return Path(root) / ".lockgate" / "spans.jsonl"


def read_spans(path: Path) -> list[SpanRecord]:
    """Every span in a spans file (lines that are not a span record are skipped)."""
    records = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            records.append(SpanRecord.from_json(json.loads(line)))
        except (ValueError, TypeError):
            continue
    return records


def delivery_trace(spans: Iterable[SpanRecord], delivery: str) -> list[SpanRecord]:
    """The spans of the trace a delivery started, in start order; [] if none.

    A duplicate's receipt is a trace of its own (marked ``lockgate.duplicate``) and is passed over;
    a stack started afresh may store the same id again: the newest delivery of it is the one shown.
    """
    spans = list(spans)
    own = [s for s in spans if s.attributes.get(DELIVERY) == delivery]
    first = [s for s in own if not s.attributes.get("lockgate.duplicate")] or own
    if not first:
        return []
    trace_id = max(first, key=lambda s: s.start).trace_id
    return sorted(
        (s for s in spans if s.trace_id == trace_id), key=lambda s: (s.start, -s.end)
    )  # outer first


def _record(span: ReadableSpan) -> SpanRecord:
    context, parent = span.context, span.parent
    status = span.status.status_code.name.lower()
    if status == "error" and span.status.description:
        status = f"error: {span.status.description[:200]}"
    return SpanRecord(
        trace_id=f"{context.trace_id:032x}",
        span_id=f"{context.span_id:016x}",
        parent_id=f"{parent.span_id:016x}" if parent is not None else None,
        name=span.name,
        kind=span.kind.name.lower(),
        start=(span.start_time or 0) / 1e9,
        end=(span.end_time or span.start_time or 0) / 1e9,
        status=status,
        attributes={k: list(v) if isinstance(v, tuple) else v for k, v in (span.attributes or {}).items()},
        links=[f"{link.context.trace_id:032x}" for link in span.links],
        events=[
            {"name": e.name, "time": e.timestamp / 1e9, "attributes": dict(e.attributes or {})}
            for e in span.events
        ],
    )
