"""Modules stay small (≤ 300 lines) and functions short (≤ 60 lines), outside the tests.

``WAITING`` lists what is still over, each with its size when it was listed: it may only shrink.
A new module or function over the limit fails, and so does a listed one that grew.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("layers/core/lockgate", "infra/lockgate_infra", "workflows/shop", "functions", "benchmarks")
MODULE_LINES, FUNCTION_LINES = 300, 60
WAITING: dict[str, int] = {}
# Data a command writes, not code a person reads or edits (`make prices`: the price table).
GENERATED = frozenset({"layers/core/lockgate/model/published_prices.py"})


def sizes() -> dict[str, int]:
    """Every module's line count and every function's, by ``path`` and ``path:function``."""
    found: dict[str, int] = {}
    for top in SOURCES:
        for path in sorted((ROOT / top).rglob("*.py")):
            if any(part.is_symlink() for part in (path, *path.parents) if part != ROOT):
                continue  # a function's symlink to the layer or the workflows package: counted there
            name = str(path.relative_to(ROOT))
            if name in GENERATED:
                continue
            text = path.read_text(encoding="utf-8")
            found[name] = len(text.splitlines())
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    length = (node.end_lineno or node.lineno) - node.lineno + 1
                    found[f"{name}:{node.name}"] = max(length, found.get(f"{name}:{node.name}", 0))
    return found


def test_no_module_or_function_is_over_its_limit_unless_listed_and_none_listed_grew() -> None:
    over = {
        name: size
        for name, size in sizes().items()
        if size > (FUNCTION_LINES if ":" in name else MODULE_LINES)
    }
    grown = {name: size for name, size in over.items() if size > WAITING.get(name, 0)}
    assert grown == {}


def test_the_waiting_list_names_only_what_is_still_over() -> None:
    current = sizes()
    settled = [
        name for name in WAITING if current.get(name, 0) <= (FUNCTION_LINES if ":" in name else MODULE_LINES)
    ]
    assert settled == [], "now within the limit: take these off WAITING"
