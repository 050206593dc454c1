"""``lockgate local --stand-in VARIABLE=package.module:factory``: your outside APIs, played on loopback.

The factory returns a stand-in server (a ``lockgate_infra.testing.RecordingApi``); the local stack
starts it, sets ``VARIABLE`` to its URL in every function's environment (where your workflow's
``register`` reads the API's base URL), lists it with the other stand-ins, and prints a console
line per call it records.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from typing import Any, Protocol, Self

from lockgate_infra.serving import Activity

SPEC = re.compile(r"^(?P<variable>[A-Za-z_][A-Za-z0-9_]*)=(?P<factory>[A-Za-z_][\w.]*:[A-Za-z_]\w*)$")


class StandInError(ValueError):
    """A ``--stand-in`` names no factory of a stand-in server; the message says which and what to give."""


class OutsideApi(Protocol):
    """A stand-in server for an outside API (what ``RecordingApi`` is)."""

    name: str
    sink: Callable[[str], None] | None
    activity: Activity

    @property
    def url(self) -> str: ...  # noqa: D102

    @property
    def running(self) -> bool: ...  # noqa: D102

    def start(self) -> Self: ...  # noqa: D102

    def stop(self) -> None: ...  # noqa: D102


@contextmanager
def outside_apis(specs: Sequence[str], sink: Callable[[str], None]) -> Iterator[dict[str, OutsideApi]]:
    """Each ``VARIABLE=package.module:factory`` started, by its variable; stopped afterwards."""
    built = {variable: _built(spec, variable, factory) for spec, variable, factory in map(_parsed, specs)}
    with ExitStack() as running:
        for api in built.values():
            api.sink = sink
            api.start()
            running.callback(api.stop)
        yield built


def _parsed(spec: str) -> tuple[str, str, str]:
    found = SPEC.match(spec)
    if found is None:
        raise StandInError(
            f"--stand-in {spec!r} is not VARIABLE=package.module:factory "
            "(e.g. PAYMENTS_API_URL=disputes.payments:payments_stand_in)"
        )
    return spec, found["variable"], found["factory"]


def _built(spec: str, variable: str, factory: str) -> OutsideApi:
    module_name, _, name = factory.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise StandInError(f"--stand-in {spec}: cannot import {module_name} ({exc})") from exc
    make: Any = getattr(module, name, None)
    if not callable(make):
        raise StandInError(f"--stand-in {spec}: {module_name} has no function {name}")
    api = make()
    if not all(hasattr(api, attribute) for attribute in ("url", "start", "stop", "activity", "name")):
        raise StandInError(
            f"--stand-in {spec}: {name}() returned {type(api).__name__}, not a stand-in server "
            "(return a lockgate_infra.testing.RecordingApi)"
        )
    return api  # type: ignore[no-any-return]
