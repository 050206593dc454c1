"""`lockgate spend`: dollars, tokens and cache use per task and model per UTC day.

Reads the daily rollup the worker writes when each run finishes (one Query per day, see
``lockgate.model.usage``), so it costs a handful of reads however many calls were made.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from lockgate.model.usage import day_of, read_day
from lockgate_infra.options import positive_int

COLUMNS = ("runs", "calls", "usd", "input_tokens", "output_tokens", "cache_creation_input_tokens",
           "cache_read_input_tokens", "cache_hits", "batched")  # fmt: skip


def add_spend_parser(commands: Any, *, run: Callable[[argparse.Namespace], int]) -> argparse.ArgumentParser:
    """The `spend` command; returned so the caller adds --local/--stack."""
    spend: argparse.ArgumentParser = commands.add_parser(
        "spend", help="dollars, tokens and cache hit ratio per task and model per day"
    )
    spend.add_argument(
        "--days", type=positive_int, default=7, help="UTC days back, today included (default 7)"
    )
    spend.add_argument("--json", action="store_true", help="machine-readable output")
    spend.set_defaults(run=run)
    return spend


def spend_rows(dynamodb: Any, table: str, now: float, days: int) -> list[dict[str, Any]]:
    """The rollup rows of the last ``days`` UTC days, newest first, with the prompt-cache hit ratio."""
    if days < 1:
        raise ValueError("--days must be at least 1")
    rows = []
    for back in range(days):
        for row in read_day(dynamodb, table, day_of(now - back * 86_400)):
            rows.append(
                {**{k: row.get(k, Decimal(0)) for k in COLUMNS}, **_names(row), "ratio": cache_ratio(row)}
            )
    return rows


def cache_ratio(row: dict[str, Any]) -> float:
    """Share of prompt tokens read from the prompt cache (cache reads / all input tokens)."""
    read = Decimal(row.get("cache_read_input_tokens", 0))
    total = read + Decimal(row.get("input_tokens", 0)) + Decimal(row.get("cache_creation_input_tokens", 0))
    return float(read / total) if total else 0.0


def render(rows: list[dict[str, Any]]) -> str:
    """A table, one line per day, task and model, and a total."""
    head = f"{'day':<11}{'task':<18}{'model':<20}{'runs':>5}{'calls':>6}{'dollars':>10}"
    head += f"{'input':>9}{'output':>8}{'c.write':>9}{'c.read':>9}{'c.ratio':>8}{'saved':>6}{'batch':>6}"
    lines = [head]
    for r in rows:
        lines.append(
            f"{r['day']:<11}{r['task'][:17]:<18}{r['model'][:19]:<20}{r['runs']:>5}{r['calls']:>6}"
            f"{r['usd']:>10.4f}{r['input_tokens']:>9}{r['output_tokens']:>8}"
            f"{r['cache_creation_input_tokens']:>9}{r['cache_read_input_tokens']:>9}{r['ratio']:>8.0%}"
            f"{r['cache_hits']:>6}{r['batched']:>6}"
        )
    total = sum((r["usd"] for r in rows), Decimal(0))
    lines.append(f"total: ${total:.4f} over {len(rows)} row(s)  (saved = answers from the response cache)")
    return "\n".join(lines)


def as_json(rows: list[dict[str, Any]]) -> str:
    """Rows as JSON (numbers as numbers)."""
    return json.dumps(rows, indent=2, default=lambda v: float(v) if isinstance(v, Decimal) else str(v))


def _names(row: dict[str, Any]) -> dict[str, Any]:
    return {"day": row["day"], "task": row["task"], "model": row["model"]}
