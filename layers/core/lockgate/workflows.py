"""Load the deployment's workflows packages, in order, and let each register its handlers and tasks.

A workflows package is a Python package with a ``register(setup)`` function and, if it touches
AWS, a module-level ``RESOURCES`` (``lockgate.declared``). Before any package registers, every
declared resource's variable must be set in the function's environment: a missing one stops the
function at start with the workflow, the resource and the line to add to ``template.yaml``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any

from lockgate.clock import Clock, SystemClock
from lockgate.declared import Resource
from lockgate.errors import ConfigError
from lockgate.inbox.routing import Router

if TYPE_CHECKING:
    from lockgate.agent.tasks import Task


@dataclass
class Setup:
    """What a workflows package's ``register(setup)`` receives from the worker (the composition root).

    A workflows package (listed under ``[workflows] packages`` in lockgate.toml) is a Python package
    with, at its top level:

    - ``register(setup)``, required: builds the package's services from ``environ``, ``client``
      and ``clock``, routes plain handlers with ``setup.router.add`` and adds agent tasks with
      ``setup.add_task``. Packages register in the listed order.
    - ``RESOURCES``, if it touches AWS: a tuple of ``Resource``. Every variable they name must be
      set before any package registers, and ``lockgate check`` compares them with template.yaml.
    - ``seed_local(client, resources)``, optional: seeds the embedded stack (``lockgate local``,
      the demo, ``TestStack``) with sample data; ``client(service)`` makes a boto3 client on it and
      ``resources`` maps each template logical id to its name there.
    """

    router: Router
    """Where a plain handler is routed: ``setup.router.add(source, event_type, handler)``."""

    environ: Mapping[str, str]
    """The function's environment: your resources' names (the variables your ``RESOURCES`` declare)."""

    client: Callable[[str], Any]
    """The function's boto3 client factory: ``setup.client("dynamodb")``."""

    tasks: list[Task] = field(default_factory=list)
    """The agent tasks registered so far, by every workflow loaded before yours too."""

    clock: Clock = field(default_factory=SystemClock)
    """The function's clock: give it to your services, so tests and harnesses can move time."""

    workflow: str = ""
    """The workflows package registering now (set by ``load_workflows``); errors name it."""

    _owners: dict[str, str] = field(default_factory=dict, init=False, repr=False)  # task → workflow

    def add_task(self, task: Task) -> None:
        """Register an agent task; the worker routes its trigger to the agent loop.

        Task names are unique across every workflow, and so are triggers (source and event type).
        """
        for other in self.tasks:
            owner = self._owners.get(other.name, "")
            if other.name == task.name:
                raise ConfigError(
                    f"{self._by(self.workflow)} registers a task called {task.name!r}, which "
                    f"{self._by(owner)} already registered; task names are unique across workflows: "
                    "rename one"
                )
            if (other.source, other.event_type) == (task.source, task.event_type):
                raise ConfigError(
                    f"{self._by(self.workflow)}'s task {task.name!r} and {self._by(owner)}'s task "
                    f"{other.name!r} both start on {task.source} {task.event_type!r}; give one another "
                    "trigger"
                )
        self.tasks.append(task)
        self._owners[task.name] = self.workflow

    def workflow_of(self, task_name: str) -> str:
        """The workflows package that registered a task ("" when it was added outside one)."""
        return self._owners.get(task_name, "")

    @staticmethod
    def _by(workflow: str) -> str:
        return f"workflow {workflow}" if workflow else "the setup"


def load_workflows(packages: str | Sequence[str], setup: Setup) -> None:
    """Import each package, check its declared resources' variables, then call each ``register(setup)``.

    Packages register in the order given. ``packages`` may be one name. Every package is checked
    before the first registers, so no workflow runs half-configured beside another.
    """
    names = (packages,) if isinstance(packages, str) else tuple(packages)
    registers = {}
    for name in names:
        module = import_workflow(name)
        register = getattr(module, "register", None)
        if not callable(register):
            raise ConfigError(f"workflows package {name!r} has no register(setup) function")
        require_variables(name, declared_resources(name, module), setup.environ)
        registers[name] = register
    for name, register in registers.items():
        setup.workflow = name
        try:
            register(setup)
        except ValueError as exc:  # a route another workflow already took (Router.add)
            raise ConfigError(f"workflow {name}: {exc}") from exc
        finally:
            setup.workflow = ""


def import_workflow(package: str) -> ModuleType:
    """Import a workflows package; ConfigError names it when it cannot be imported."""
    try:
        return importlib.import_module(package)
    except ImportError as exc:
        raise ConfigError(f"workflows package {package!r} cannot be imported: {exc}") from exc
    except ValueError as exc:  # a malformed declaration (lockgate.declared) raised at import
        raise ConfigError(f"workflow {package}: {exc}") from exc


def declared_resources(package: str, module: ModuleType | None = None) -> tuple[Resource, ...]:
    """The package's ``RESOURCES`` (none when it declares none); ConfigError if it is not Resources."""
    module = module or import_workflow(package)
    declared = getattr(module, "RESOURCES", ())
    if isinstance(declared, Resource):
        declared = (declared,)
    if not isinstance(declared, (tuple, list)) or not all(isinstance(r, Resource) for r in declared):
        raise ConfigError(
            f"workflow {package}: RESOURCES must be a tuple of lockgate.Resource(...), got {declared!r:.80}"
        )
    return tuple(declared)


def require_variables(package: str, resources: Sequence[Resource], environ: Mapping[str, str]) -> None:
    """ConfigError for the first declared resource whose variable this function's environment lacks."""
    for resource in resources:
        if not environ.get(resource.variable, "").strip():
            raise ConfigError(
                f"workflow {package}: resource {resource.logical_id} needs the environment variable "
                f"{resource.variable}, which this function does not set; in template.yaml add "
                f"`{resource.template_line()}` to its Environment Variables (and run `lockgate check`)"
            )


def check_workflow_environment(packages: Sequence[str], environ: Mapping[str, str]) -> None:
    """At a function's start: every configured workflow's declared variables are set (ConfigError if not)."""
    for name in packages:
        require_variables(name, declared_resources(name), environ)
