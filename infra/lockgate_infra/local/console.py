"""What ``lockgate local`` prints: one readable line per event; the functions' JSON logs go to a file.

The handlers run in this process and write their Powertools JSON logs and metric blobs to
stdout, as they would in Lambda. While ``lockgate local`` runs, stdout is a ``RoutedStdout``: text
written while a function runs (``inside``, a context variable set by the local runtime, so the
worker's threads, each running a record in a copy of its context, count too) goes whole to the log
file, and the console gets one short line per log record (time, function, level, message, the ids
that matter); metric blobs never reach the console. ``--verbose`` shows the JSON as well.
"""

from __future__ import annotations

import io
import json
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any, TextIO

# Fields worth a glance on the console, in this order; everything else stays in the file.
SHOWN = (
    "delivery", "id", "source", "task", "tool", "status", "outcome", "job", "approval", "reason", "error",
)  # fmt: skip
_function: ContextVar[str | None] = ContextVar("lockgate_local_function", default=None)


@contextmanager
def inside(function: str) -> Iterator[None]:
    """Mark this context as running ``function`` (its output is the function's log)."""
    token = _function.set(function)
    try:
        yield
    finally:
        _function.reset(token)


def one_line(function: str, text: str) -> str | None:
    """The console's line for one line of a function's output; None for metric blobs and blank lines."""
    text = text.strip()
    if not text:
        return None
    try:
        record: Any = json.loads(text)
    except ValueError:
        return f"{_now()} {function:<24} {text[:200]}"
    if not isinstance(record, dict):
        return f"{_now()} {function:<24} {text[:200]}"
    if "_aws" in record:
        return None  # an embedded-metric blob: in the file only
    level = str(record.get("level", "INFO"))
    fields = " ".join(f"{key}={record[key]}" for key in SHOWN if record.get(key) not in (None, ""))
    message = str(record.get("message", ""))[:160]
    return f"{_now()} {function:<24} {level:<7} {message}" + (f"  {fields}" if fields else "")


class RoutedStdout(io.TextIOBase):
    """stdout while the stack runs: the functions' output to ``log_file``, one line each to the console."""

    def __init__(
        self, console: TextIO, log_file: TextIO, *, verbose: bool = False, summaries: bool = True
    ) -> None:
        self._console = console
        self._log = log_file
        self._verbose = verbose
        self._summaries = summaries  # False: the console gets nothing of the functions' output
        self._lock = threading.Lock()
        self._partial: dict[int, str] = {}  # per thread: text not yet ended by a newline

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        function = _function.get()
        if function is None:
            return self._console.write(text)
        with self._lock:
            self._log.write(text)
            self._log.flush()
            if self._verbose:
                self._console.write(text)
                return len(text)
            if not self._summaries:
                return len(text)
            key = threading.get_ident()
            *lines, rest = (self._partial.pop(key, "") + text).split("\n")
            if rest:
                self._partial[key] = rest
            for line in lines:
                shown = one_line(function, line)
                if shown is not None:
                    self._console.write(shown + "\n")
            self._console.flush()
        return len(text)

    def flush(self) -> None:
        self._console.flush()


@contextmanager
def routed_stdout(
    console: TextIO, log_path: Path, *, verbose: bool = False, summaries: bool = True
) -> Iterator[Path]:
    """Install a RoutedStdout for the duration; the functions' JSON logs append to ``log_path``."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    previous = sys.stdout
    with log_path.open("a", encoding="utf-8") as log_file:
        sys.stdout = RoutedStdout(console, log_file, verbose=verbose, summaries=summaries)
        try:
            yield log_path
        finally:
            sys.stdout = previous


def _now() -> str:
    return time.strftime("%H:%M:%S")
