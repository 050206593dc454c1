"""Load the deployment's own workflows package and let it register its handlers."""

from __future__ import annotations

import importlib

from lockgate.errors import ConfigError
from lockgate.routing import Router


def load_workflows(package: str | None, router: Router) -> None:
    """Import ``package`` and call its ``register(router)``; nothing to do without one."""
    if not package:
        return
    try:
        module = importlib.import_module(package)
    except ImportError as exc:
        raise ConfigError(f"workflows package {package!r} cannot be imported: {exc}") from exc
    register = getattr(module, "register", None)
    if not callable(register):
        raise ConfigError(f"workflows package {package!r} has no register(router) function")
    register(router)
