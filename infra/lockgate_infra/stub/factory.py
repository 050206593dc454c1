"""Your own model for the stub server: ``package.module:factory``, a function that returns one."""

from __future__ import annotations

import importlib
import re

from lockgate_infra.stub.replies import Model

SPEC = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
# The example shop's offline models by their short names (`--model demo`, `--model gullible`):
# the shop's package builds them like any workflow's, these names only spell its factories.
EXAMPLE_MODELS = {
    "demo": "shop.model:scripted_model",
    "shop": "shop.model:scripted_model",
    "gullible": "shop.model:gullible_model",
}


class ModelFactoryError(ValueError):
    """``package.module:factory`` does not name a function that returns a model."""


def is_factory_spec(spec: str) -> bool:
    """Whether ``spec`` names a model factory (``package.module:factory``) rather than a built-in model."""
    return ":" in spec


def load_model(spec: str) -> Model:
    """Import ``package.module`` and call ``factory()``; the model it returns answers the stub's requests."""
    if not SPEC.match(spec):
        raise ModelFactoryError(
            f"model {spec!r} is not package.module:factory (e.g. triage.models:triage_model)"
        )
    module_name, _, name = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ModelFactoryError(f"model {spec!r}: cannot import {module_name} ({exc})") from exc
    factory = getattr(module, name, None)
    if not callable(factory):
        raise ModelFactoryError(f"model {spec!r}: {module_name} has no function {name}")
    try:
        model = factory()
    except Exception as exc:  # noqa: BLE001 - an author's factory may fail any way: say which, in one line
        raise ModelFactoryError(f"model {spec!r}: {name}() failed: {type(exc).__name__}: {exc}") from exc
    if not callable(model):
        raise ModelFactoryError(
            f"model {spec!r}: {name}() returned {type(model).__name__}, not a model "
            "(a callable taking a Messages API request, such as a ScriptedModel)"
        )
    return model  # type: ignore[no-any-return]
