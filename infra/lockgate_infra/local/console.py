"""What ``lockgate local`` prints: one readable line per event; the functions' JSON logs go to a file.

The handlers run in this process and write their Powertools JSON logs and metric blobs to stdout
(and tracebacks, warnings and the print channel's approval links to stderr), as they would in
Lambda, where both streams are the function's log. While the stack runs, stdout and stderr are
``RoutedStream``\\ s: text written while a function runs (``inside``, a context variable set by the
local runtime, so the worker's threads, each running a record in a copy of its context, count too)
goes to the log file, and the console gets one short line per log record (time, function, level,
message, the ids that matter); metric blobs never reach the console. ``--verbose`` shows the JSON.

Everything reaches the file and the console in whole lines, one writer at a time. ``print`` writes
its text and its newline in two calls, and several threads print at once (the gateway's requests,
the pollers, the scheduler): passing each call through as it came spliced one thread's line into
the middle of another's (a JSON log line inside an approval link, with stdout redirected to a file).
"""

from __future__ import annotations

import io
import json
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any, TextIO

# Fields worth a glance on the console, in this order; everything else stays in the file.
SHOWN = (
    "delivery", "id", "source", "task", "tool", "status", "outcome", "job", "approval", "reason", "error",
)  # fmt: skip
_function: ContextVar[str | None] = ContextVar("lockgate_local_function", default=None)

Watcher = Callable[[str, str], None]  # (function, one line it wrote)


@contextmanager
def inside(function: str) -> Iterator[None]:
    """Mark this context as running ``function`` (its output is the function's log)."""
    token = _function.set(function)
    try:
        yield
    finally:
        _function.reset(token)


def one_line(function: str, text: str) -> str | None:
    """The console's line for one line of a function's output; None for metric blobs and blank lines.

    A JSON record shows its level, message, the fields in SHOWN and the start of the request id it
    carries; any other text (an approval link the print channel wrote) is shown whole.
    """
    text = text.strip()
    if not text:
        return None
    try:
        record: Any = json.loads(text)
    except ValueError:
        return f"{_now()} {function:<24} {text}"
    if not isinstance(record, dict):
        return f"{_now()} {function:<24} {text}"
    if "_aws" in record:
        return None  # an embedded-metric blob: in the file only
    level = str(record.get("level", "INFO"))
    fields = " ".join(f"{key}={record[key]}" for key in SHOWN if record.get(key) not in (None, ""))
    request = str(record.get("function_request_id") or "")[:8]
    fields += f" req={request}" if request else ""
    message = str(record.get("message", ""))[:160]
    return f"{_now()} {function:<24} {level:<7} {message}" + (f"  {fields.strip()}" if fields else "")


class Console:
    """A terminal several threads write to: each line whole, flushed as it is written."""

    def __init__(self, out: TextIO) -> None:
        self._out = out
        self._lock = threading.Lock()

    def line(self, text: str) -> None:
        """Write ``text`` and a newline, alone."""
        with self._lock:
            self._out.write(text + "\n")
            self._out.flush()

    def stamped(self, text: str) -> None:
        """``text`` after the time, as the functions' lines show it (the Slack stand-in's lines)."""
        self.line(f"{_now()} {text}")

    def write(self, text: str) -> int:
        """Write ``text`` as it is, alone (a logging handler's record and its newline come in one call)."""
        with self._lock:
            self._out.write(text)
            self._out.flush()
        return len(text)

    def flush(self) -> None:
        """Every write is flushed already."""


class FunctionLog:
    """The functions' output while the stack runs: the log file, and what the console shows of it."""

    def __init__(
        self,
        console: Console,
        log_file: TextIO,
        *,
        verbose: bool = False,
        summaries: bool = True,
        watch: Watcher | None = None,
    ) -> None:
        self._console = console
        self._file = log_file
        self._verbose = verbose
        self._summaries = summaries  # False: the console gets nothing of the functions' output
        self._watch = watch  # sees every line (the demo collects the approval links)
        self._lock = threading.Lock()

    def line(self, function: str, text: str) -> None:
        """One whole line ``function`` wrote."""
        with self._lock:
            self._file.write(text + "\n")
            self._file.flush()
        if self._watch is not None:
            self._watch(function, text)
        if self._verbose:
            self._console.line(text)
        elif self._summaries:
            shown = one_line(function, text)
            if shown is not None:
                self._console.line(shown)


class RoutedStream(io.TextIOBase):
    """stdout or stderr while the stack runs: a function's lines to its log, other text to ``outside``."""

    def __init__(
        self, log: FunctionLog, outside: Callable[[str], object], flush_outside: Callable[[str], object]
    ) -> None:
        self._log = log
        self._outside = outside  # one whole line written outside any function
        self._flush_outside = flush_outside  # a partial line flushed on purpose (a prompt)
        self._lock = threading.Lock()
        self._partial: dict[tuple[int, str | None], str] = {}  # per thread and function: no newline yet

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        function = _function.get()
        key = (threading.get_ident(), function)
        with self._lock:
            *lines, rest = (self._partial.pop(key, "") + text).split("\n")
            if rest:
                self._partial[key] = rest
        for line in lines:
            if function is None:
                self._outside(line)
            else:
                self._log.line(function, line)
        return len(text)

    def flush(self) -> None:
        # A function's partial line waits for its newline (log lines are whole); text outside any
        # function that is flushed without one (a prompt) goes out now.
        key = (threading.get_ident(), None)
        with self._lock:
            rest = self._partial.pop(key, "")
        if rest:
            self._flush_outside(rest)


@contextmanager
def routed_output(
    terminal: Console,
    log_path: Path,
    *,
    verbose: bool = False,
    summaries: bool = True,
    watch: Watcher | None = None,
) -> Iterator[Path]:
    """Route stdout and stderr for the duration; the functions' output appends to ``log_path``."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    previous = sys.stdout, sys.stderr
    err = previous[1]

    def to_stderr(text: str) -> None:
        err.write(text)
        err.flush()

    with log_path.open("a", encoding="utf-8") as log_file:
        log = FunctionLog(terminal, log_file, verbose=verbose, summaries=summaries, watch=watch)
        sys.stdout = RoutedStream(log, terminal.line, terminal.write)
        sys.stderr = RoutedStream(log, lambda line: to_stderr(line + "\n"), to_stderr)
        try:
            yield log_path
        finally:
            sys.stdout, sys.stderr = previous


def _now() -> str:
    return time.strftime("%H:%M:%S")
