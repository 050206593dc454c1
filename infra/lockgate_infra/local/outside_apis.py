"""Your outside APIs, played on loopback: ``lockgate local --stand-in VARIABLE=package.module:factory``,
and each workflows package's own (its optional ``local_stand_ins(dev_secrets)``).

A factory returns a stand-in server (a ``lockgate_infra.testing.RecordingApi``, or an MCP server such
as ``lockgate_infra.mcp_example.McpExample``); a package's ``local_stand_ins`` returns them by
variable. The local stack (``lockgate local``, the demo, ``TestStack``) starts each, sets
``VARIABLE`` to its URL in every function's environment (where your workflow's ``register`` reads
the API's base URL, or lockgate.toml's ``url = "env:VARIABLE"`` an MCP server's), lists it with the
other stand-ins, and prints a console line per call it records. A ``--stand-in`` replaces a
package's own for the same variable.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
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


_SERVER = ("url", "name", "activity", "running", "start", "stop")  # what a stand-in server has


@contextmanager
def outside_apis(
    specs: Sequence[str],
    sink: Callable[[str], None] | None,
    own: Mapping[str, OutsideApi] | None = None,
) -> Iterator[dict[str, OutsideApi]]:
    """Each ``VARIABLE=package.module:factory`` started, by its variable, and each of the workflows'
    ``own`` stand-ins that no spec replaces; all stopped afterwards."""
    built = {variable: _built(spec, variable, factory) for spec, variable, factory in map(_parsed, specs)}
    built = {**{v: api for v, api in (own or {}).items() if v not in built}, **built}
    with ExitStack() as running:
        for api in built.values():
            api.sink = sink
            api.start()
            running.callback(api.stop)
        yield built


@contextmanager
def stand_ins_of(
    config_path: Path, specs: Sequence[str], sink: Callable[[str], None] | None, *, given: Sequence[str] = ()
) -> Iterator[dict[str, OutsideApi]]:
    """The stand-ins of a local stack on ``config_path``: the ``specs`` and its workflows' own, but
    for the variables ``given`` (a value the caller sets itself), started; stopped afterwards."""
    from lockgate.config import load_config
    from lockgate_infra.local.devsecrets import dev_secret_values

    own: dict[str, OutsideApi] = {}
    if config_path.is_file():  # a template's own stack may run without one
        config = load_config(config_path)
        own = workflow_stand_ins(config.workflows.packages, config_path.parent, dev_secret_values(config))
    with outside_apis(specs, sink, {v: api for v, api in own.items() if v not in given}) as apis:
        yield apis


def workflow_stand_ins(
    packages: Sequence[str], root: Path, dev_secrets: Mapping[str, str]
) -> dict[str, OutsideApi]:
    """Each workflows package's own stand-ins, by variable, not started: what its optional
    ``local_stand_ins(dev_secrets)`` returns (``dev_secrets``: the local stack's development secrets
    by name, an MCP server's credential as ``mcp.<server>``). StandInError names a package whose
    hook returns something else than stand-in servers by variable."""
    from lockgate_infra.workflow_path import first_on_path

    found: dict[str, OutsideApi] = {}
    with first_on_path(root / "workflows"):  # the checkout's packages, as seed_workflows finds them
        for package in packages:
            hook = getattr(importlib.import_module(package), "local_stand_ins", None)
            if not callable(hook):
                continue
            given = hook(dict(dev_secrets))
            if not isinstance(given, Mapping):
                raise StandInError(
                    f"workflow {package}: local_stand_ins() returned {type(given).__name__}, "
                    "not stand-in servers by variable ({'PAYMENTS_API_URL': RecordingApi(...)})"
                )
            for variable, api in given.items():
                if not isinstance(variable, str) or not all(hasattr(api, a) for a in _SERVER):
                    raise StandInError(
                        f"workflow {package}: local_stand_ins() gave {variable!r} a "
                        f"{type(api).__name__}, not a stand-in server (a lockgate_infra.testing.RecordingApi)"
                    )
                found[variable] = api
    return found


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
    if not all(hasattr(api, attribute) for attribute in _SERVER):
        raise StandInError(
            f"--stand-in {spec}: {name}() returned {type(api).__name__}, not a stand-in server "
            "(return a lockgate_infra.testing.RecordingApi)"
        )
    return api  # type: ignore[no-any-return]
