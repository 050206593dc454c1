"""Load the deployment's workflows packages, in order, and let each register its handlers and tasks.

A workflows package is a Python package with a ``register(setup)`` function and, if it touches
AWS, a module-level ``RESOURCES`` (``lockgate.declared``). Before any package registers, every
declared resource's variable must be set in the function's environment: a missing one stops the
function at start with the workflow, the resource and the line to add to ``template.yaml``.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from lockgate.clock import Clock, SystemClock
from lockgate.config.mcp import McpServerConfig
from lockgate.declared import Resource
from lockgate.errors import ConfigError
from lockgate.inbox.routing import Router
from lockgate.secrets import SecretResolver
from lockgate.telemetry import CountingMetrics, Log, Metrics

if TYPE_CHECKING:
    from lockgate.actions.mcp_tools import McpServer
    from lockgate.agent.tasks import Task
    from lockgate.mcp.pins import PinFile


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
    - ``local_stand_ins(dev_secrets)``, optional: servers that play its outside services on the
      embedded stack (a ``lockgate_infra.testing.RecordingApi``, an MCP server), by the variable
      that gives each one's URL (``{"TICKETS_MCP_URL": ...}``); the stack starts them and sets
      the variables. ``dev_secrets`` holds the stack's development secrets by name, an MCP
      server's credential as ``mcp.<server>``, so a stand-in can accept exactly that one.
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

    mcp_servers: Mapping[str, McpServerConfig] = field(default_factory=dict)
    """lockgate.toml's ``[mcp.servers]``: what ``setup.mcp(name)`` builds a server's tools from."""

    secrets: SecretResolver | None = None
    """The function's secret cache (MCP credentials); None: one over ``environ`` and Secrets Manager."""

    log: Log = field(default_factory=lambda: logging.getLogger("lockgate"))
    """The function's logger."""

    metrics: Metrics = field(default_factory=CountingMetrics)
    """The function's metrics (``McpToolChanged``, ``McpCallFailed``)."""

    _owners: dict[str, str] = field(default_factory=dict, init=False, repr=False)  # task → workflow
    _mcp_users: dict[str, set[str]] = field(
        default_factory=dict, init=False, repr=False
    )  # server → workflows

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

    def mcp(self, server: str) -> McpServer:
        """An MCP server from lockgate.toml's ``[mcp.servers.NAME]``, with the definitions pinned in
        this workflow's ``mcp/<server>.json``: ``setup.mcp("tickets").tools("get_ticket", ...)``.

        ConfigError names a server lockgate.toml lacks, or a pin file that is missing or damaged.
        """
        from lockgate.actions.mcp_tools import McpServer  # the MCP parts load only where one is used

        config = self.mcp_servers.get(server)
        if config is None:
            raise ConfigError(
                f"{self._by(self.workflow)} uses MCP server {server!r}, which lockgate.toml does not "
                f"configure: add an [mcp.servers.{server}] section"
            )
        if config.url.startswith("env:"):  # the address differs per stage, or is a local stand-in's
            variable = config.url.removeprefix("env:")
            url = self.environ.get(variable, "").strip()
            if not url:
                raise ConfigError(
                    f"{self._by(self.workflow)} uses MCP server {server!r}, whose url is in the "
                    f"environment variable {variable}, which this function does not set"
                )
            config = replace(config, url=url)
        if self.secrets is None:
            self.secrets = SecretResolver(self.environ, secretsmanager=lambda: self.client("secretsmanager"))
        pins = read_pins(pin_path(self.workflow, server), server, self.workflow)
        self._mcp_users.setdefault(server, set()).add(self.workflow)
        return McpServer(
            server,
            config,
            pins,
            secrets=self.secrets,
            log=self.log,
            metrics=self.metrics,
            workflow=self.workflow,
        )

    def mcp_users(self) -> dict[str, set[str]]:
        """Each MCP server a workflow asked for (``setup.mcp``), and the workflows that did."""
        return {server: set(workflows) for server, workflows in self._mcp_users.items()}

    def workflow_of(self, task_name: str) -> str:
        """The workflows package that registered a task ("" when it was added outside one)."""
        return self._owners.get(task_name, "")

    @staticmethod
    def _by(workflow: str) -> str:
        return f"workflow {workflow}" if workflow else "the setup"


def pin_path(package: str, server: str) -> Path:
    """Where a workflows package keeps a server's pinned tool definitions: ``<package>/mcp/<server>.json``."""
    if not package:
        raise ConfigError(f"MCP server {server!r} is used outside a workflows package: its pins live in one")
    module = import_workflow(package)
    if module.__file__ is None:
        raise ConfigError(f"workflows package {package!r} has no directory to keep MCP pins in")
    return Path(module.__file__).parent / "mcp" / f"{server}.json"


def read_pins(path: Path, server: str, package: str) -> PinFile:
    """The pin file at ``path``; ConfigError says what is wrong and how to make it."""
    from lockgate.mcp.pins import PinFile, pin_command

    hint = pin_command(server, package)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(
            f"workflow {package}: MCP server {server!r} has no pin file ({path.name}): {hint}"
        ) from None
    except OSError as exc:
        raise ConfigError(
            f"workflow {package}: the pin file of MCP server {server!r} cannot be read: {exc}"
        ) from None
    pins = PinFile.loads(text, source=f"workflow {package}'s pins of MCP server {server!r}")
    if pins.server != server:
        raise ConfigError(
            f"workflow {package}: {path.name} holds the pins of MCP server {pins.server!r}: {hint}"
        )
    return pins


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
