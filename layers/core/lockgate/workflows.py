"""Load the deployment's own workflows package and let it register its handlers and agent tasks."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lockgate.clock import Clock, SystemClock
from lockgate.errors import ConfigError
from lockgate.inbox.routing import Router

if TYPE_CHECKING:
    from lockgate.agent.tasks import Task


@dataclass
class Setup:
    """What a workflows package's ``register(setup)`` receives from the worker (the composition root)."""

    router: Router
    environ: Mapping[str, str]  # the function's environment (e.g. your tables' names)
    client: Callable[[str], Any]  # boto3 client factory: setup.client("dynamodb")
    tasks: list[Task] = field(default_factory=list)
    clock: Clock = field(default_factory=SystemClock)  # the function's clock: give it to your services

    def add_task(self, task: Task) -> None:
        """Register an agent task; the worker routes its trigger to the agent loop."""
        if any(t.name == task.name for t in self.tasks):
            raise ValueError(f"a task called {task.name!r} is already registered")
        self.tasks.append(task)


def load_workflows(package: str | None, setup: Setup) -> None:
    """Import ``package`` and call its ``register(setup)``; nothing to do without one."""
    if not package:
        return
    try:
        module = importlib.import_module(package)
    except ImportError as exc:
        raise ConfigError(f"workflows package {package!r} cannot be imported: {exc}") from exc
    register = getattr(module, "register", None)
    if not callable(register):
        raise ConfigError(f"workflows package {package!r} has no register(setup) function")
    register(setup)
