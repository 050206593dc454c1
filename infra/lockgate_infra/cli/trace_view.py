"""`lockgate runs trace ID`: a delivery's trace as a waterfall, from the local stack's spans.

Each line is one span: when it started (after the trace's first span), how long it took, its name
indented under its parent, and what it says in a few words (tokens and dollars of a model call, the
guard's check and the ledger's state of a tool call, who decided an approval and how).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from lockgate_infra.failures import CommandError
from lockgate_infra.local.spans import SpanRecord, delivery_trace, read_spans, spans_file

NAME_WIDTH = 44


def run_trace(args: argparse.Namespace, root: Path) -> int:
    """Print the delivery's trace; CommandError when there is nothing to read."""
    if getattr(args, "stack", None):
        raise CommandError(
            f"traces of a deployed stack are in CloudWatch: open Application Signals > Transaction "
            f"Search and query lockgate.delivery.id = {args.id} (see docs/operate.md, Traces)"
        )
    path = Path(args.spans) if args.spans else spans_file(root)
    if not path.is_file():
        raise CommandError(f"no spans at {path}: run `lockgate local` (or `make demo`) and send a delivery")
    spans = delivery_trace(read_spans(path), args.id)
    if not spans:
        raise CommandError(f"no trace of {args.id} in {path}; list deliveries with `lockgate runs list`")
    if args.json:
        print(json.dumps([asdict(s) for s in spans], indent=2, default=str))
    else:
        print(render_trace(spans, args.id))
    return 0


def render_trace(spans: list[SpanRecord], delivery: str) -> str:
    """The waterfall: one line per span, children under their parent, in start order."""
    start = min(s.start for s in spans)
    end = max(s.end for s in spans)
    ids = {s.span_id for s in spans}
    children: dict[str | None, list[SpanRecord]] = {}
    for s in spans:
        children.setdefault(s.parent_id if s.parent_id in ids else None, []).append(s)
    lines = [
        f"trace {spans[0].trace_id}  {delivery}  {len(spans)} spans, "
        f"{_seconds(end - start)} from the first to the last"
    ]

    def walk(parent: str | None, depth: int) -> None:
        for s in sorted(children.get(parent, []), key=lambda x: x.start):
            name = ("  " * depth + s.name)[:NAME_WIDTH]
            error = "  ERROR" if s.status.startswith("error") else ""
            offset, took = f"+{_seconds(s.start - start)}", _seconds(s.seconds)
            lines.append(f"{offset:>10} {took:>8}  {name:<{NAME_WIDTH}} {summary(s)}{error}".rstrip())
            walk(s.span_id, depth + 1)

    walk(None, 0)
    return "\n".join(lines)


def summary(span: SpanRecord) -> str:
    """A span's attributes in a few words."""
    a = span.attributes
    if span.name.startswith("anthropic."):  # the SDK's own span of the HTTP call (metadata only)
        return _words(a.get("http.response.status_code"), a.get("anthropic.request.id"))
    if a.get("gen_ai.operation.name") == "chat":
        cached = "" if not a.get("lockgate.response_cache.hit") else " (response cache)"
        reasons = ",".join(a.get("gen_ai.response.finish_reasons") or [])
        return (
            f"{a.get('gen_ai.usage.input_tokens', 0)} in ({a.get('gen_ai.usage.cache_read.input_tokens', 0)} "
            f"cache read) · {a.get('gen_ai.usage.output_tokens', 0)} out · {reasons} · "
            f"${a.get('lockgate.cost_usd', 0):.6f}{cached}"
        )
    if a.get("gen_ai.operation.name") == "invoke_agent":
        calls, cost = a.get("lockgate.run.model_calls", 0), a.get("lockgate.cost_usd", 0)
        return f"{a.get('lockgate.run.status', '?')} · {calls} model calls · ${cost:.4f}"
    if a.get("gen_ai.operation.name") == "execute_tool":
        return _words(
            a.get("lockgate.guard.check"),
            a.get("lockgate.tool.outcome"),
            a.get("lockgate.ledger.state"),
            _approval(a),
        )
    if "lockgate.approval.reviewer" in a:
        who, verdict = a["lockgate.approval.reviewer"], a.get("lockgate.approval.verdict", "")
        via, outcome = a.get("lockgate.approval.via", "?"), a.get("lockgate.approval.outcome", "?")
        return f"{who} {verdict} via {via}: {outcome}"
    return _words(
        a.get("lockgate.delivery.id") if span.kind != "consumer" else None, a.get("lockgate.outcome")
    )


def _approval(a: dict[str, Any]) -> str | None:
    if "lockgate.approval.approvers" in a:
        return "approved by " + ", ".join(a["lockgate.approval.approvers"])
    if "lockgate.approval.id" in a:
        return f"asked a person ({a['lockgate.approval.id']})"
    return None


def _words(*parts: Any) -> str:
    return " · ".join(str(p) for p in parts if p not in (None, ""))


def _seconds(value: float) -> str:
    return f"{value:.3f}s" if value < 10 else f"{value:.1f}s"
