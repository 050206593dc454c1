"""Each invocation's Powertools log keys are its own, as each Lambda execution environment's are.

Why the local stack needs this: every function here runs in one process, and Powertools keeps its
logger state per process, per service name. ``Logger()`` with the same ``POWERTOOLS_SERVICE_NAME``
(``lockgate``, from the template's Globals) returns a view of one ``logging.getLogger("lockgate")``
whose single handler and single ``LambdaPowertoolsFormatter`` the first instance created.
``inject_lambda_context`` writes the invocation's ``function_name``, ``function_request_id``,
``cold_start``... into that formatter's one key dict (``append_keys``), so whichever invocation
started last, in any function, names every line logged after it: the worker's lines said
``WebhookReceiverFunction`` and carried another request's id. (Keys added with
``thread_safe_append_keys`` live in a context variable and were never shared.) The handler also
kept the stdout of the moment it was made, so a stack started later in the same process, or the
console's routing, never saw those lines.

On Lambda each function is its own process and each environment runs one invocation at a time, so
none of this happens there (the worker's concurrent records tag their lines through context
variables, which stay per record). Here, ``adopt`` wraps each Powertools formatter in an
``InvocationFormatter`` that keeps one copy of the keys per invocation (a context variable, so a
record's threads share their invocation's) and remembers each function's keys between its
invocations, as a warm environment would; and points the handler at whatever stdout is current.
"""

from __future__ import annotations

import copy
import logging
import sys
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from contextvars import ContextVar
from typing import Any

from aws_lambda_powertools.logging.formatter import LambdaPowertoolsFormatter

_ADOPTED: list[InvocationFormatter] = []  # as process-wide as the loggers they wrap
_ADOPTING = threading.Lock()


class _CurrentStdout:
    """A stream that is whatever ``sys.stdout`` is when a record is written (as Lambda's stdout is)."""

    def write(self, text: str) -> int:
        return sys.stdout.write(text)

    def flush(self) -> None:
        sys.stdout.flush()


class InvocationFormatter(LambdaPowertoolsFormatter):
    """A Powertools formatter whose keys belong to the invocation in progress (else the process's)."""

    def __init__(self, shared: LambdaPowertoolsFormatter) -> None:  # noqa: D107
        # Not calling super().__init__: every key and option lives in the formatter it delegates to.
        self.shared = shared
        self._current: ContextVar[LambdaPowertoolsFormatter | None] = ContextVar(
            f"lockgate_local_keys_{id(self)}", default=None
        )
        self._cold: ContextVar[bool | None] = ContextVar(f"lockgate_local_cold_{id(self)}", default=None)

    def own(self) -> LambdaPowertoolsFormatter:
        """The formatter of the invocation in progress, or the shared one outside any."""
        return self._current.get() or self.shared

    @contextmanager
    def keys_of(self, formatter: LambdaPowertoolsFormatter, cold: bool | None) -> Iterator[None]:
        """Use ``formatter``'s keys in this context; ``cold`` is this invocation's cold_start, if known."""
        tokens = self._current.set(formatter), self._cold.set(cold)
        try:
            yield
        finally:
            self._current.reset(tokens[0])
            self._cold.reset(tokens[1])

    def format(self, record: logging.LogRecord) -> str:  # noqa: A003 - logging's name
        return self.own().format(record)

    def append_keys(self, **additional_keys: Any) -> None:
        cold = self._cold.get()
        if "cold_start" in additional_keys and cold is not None:
            # Powertools counts one cold start per process; here each function has its own.
            additional_keys["cold_start"] = cold
        self.own().append_keys(**additional_keys)

    def get_current_keys(self) -> dict[str, Any]:
        return self.own().get_current_keys()

    def remove_keys(self, keys: Any) -> None:
        self.own().remove_keys(keys)

    def clear_state(self) -> None:
        self.own().clear_state()

    # An attribute on Powertools' formatter (get_correlation_id reads it): here, the invocation's.
    @property
    def log_format(self) -> dict[str, Any]:  # type: ignore[override]
        return self.own().log_format

    def __getattr__(self, name: str) -> Any:
        return getattr(self.own(), name)


def adopt() -> None:
    """Wrap every Powertools logger's formatter and stream (once); call after importing a handler."""
    with _ADOPTING:
        for candidate in list(logging.Logger.manager.loggerDict.values()):
            handler = getattr(candidate, "powertools_handler", None)
            if not isinstance(handler, logging.StreamHandler):
                continue
            formatter = handler.formatter
            if isinstance(formatter, LambdaPowertoolsFormatter) and not isinstance(
                formatter, InvocationFormatter
            ):
                wrapped = InvocationFormatter(formatter)
                handler.setFormatter(wrapped)
                _ADOPTED.append(wrapped)
            if not isinstance(handler.stream, _CurrentStdout):
                handler.setStream(_CurrentStdout())


class FunctionKeys:
    """One loaded function's log keys, kept between its invocations as its warm environment keeps them."""

    def __init__(self) -> None:
        self._saved: dict[int, LambdaPowertoolsFormatter] = {}  # by id of the InvocationFormatter
        self._lock = threading.Lock()

    @contextmanager
    def invocation(self, cold: bool | None = None) -> Iterator[None]:
        """Log with this function's own keys (a copy: a concurrent invocation has its own) until the end.

        ``cold``: whether this is the function's first invocation (None while it is being imported).
        """
        with ExitStack() as stack:
            mine = []
            for wrapper in list(_ADOPTED):
                with self._lock:
                    base = self._saved.get(id(wrapper), wrapper.shared)
                own = copy.copy(base)
                own.log_format = dict(base.log_format)  # the keys themselves: the copy's own dict
                stack.enter_context(wrapper.keys_of(own, cold))
                mine.append((wrapper, own))
            try:
                yield
            finally:
                with self._lock:  # the next invocation starts warm, from these keys
                    self._saved.update({id(wrapper): own for wrapper, own in mine})
