"""Reading ``python -X importtime`` output: what each module cost, and which ones to show."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class ImportLine:
    """One line of ``-X importtime``: microseconds spent in the module itself and with its imports."""

    module: str
    self_us: int
    cumulative_us: int


def parse_importtime(stderr: str) -> dict[str, ImportLine]:
    """``import time: self [us] | cumulative | imported package`` lines, by module name."""
    out: dict[str, ImportLine] = {}
    for line in stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|\s+(.+)$", line)
        if m:
            name = m.group(3).strip()
            out[name] = ImportLine(name, int(m.group(1)), int(m.group(2)))
    return out


def ranked(
    receiver: dict[str, ImportLine], bare: dict[str, ImportLine], top: int
) -> tuple[list[ImportLine], list[ImportLine]]:
    """Our ``lockgate*`` modules by cumulative time, and what only the receiver imports by self time."""
    # importlib.import_module (what Lambda's runtime calls) is not itself in -X importtime's output.
    ours = [line for name, line in receiver.items() if name.startswith("lockgate")]
    extra = [line for name, line in receiver.items() if name not in bare and not name.startswith("lockgate")]
    return (
        sorted(ours, key=lambda line: -line.cumulative_us)[:top],
        sorted(extra, key=lambda line: -line.self_us)[:top],
    )


def table(lines: list[ImportLine]) -> list[str]:
    """The rows as the report prints them, under a ``self us / cumul us / module`` header."""
    return [
        f"  {'self us':>8} {'cumul us':>9}  module",
        *(f"  {x.self_us:>8} {x.cumulative_us:>9}  {x.module}" for x in lines),
    ]
