"""Running a task's eval cases for real: the task from the workflows package, the real AgentLoop, moto.

Every trial gets a fresh moto account with the template's tables, each workflows package's
``register(setup)`` and ``seed_local``: side effects (refund rows, SES mail, proposals) land in
moto and nowhere else. The model is an offline stub behaviour through the real SDK against the
local stub server, or real Claude when ``ANTHROPIC_API_KEY`` is set and a ``claude-…`` model is asked.

Which model and judge: see ``eval_models``.

For the weekly scheduled eval: ``run_task_evals(task, model=..., runs=..., gate=...) -> EvalReport``.
"""

from __future__ import annotations

import dataclasses
import importlib
import logging
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lockgate.agent.tasks import Task
from lockgate.clock import SystemClock
from lockgate.config import LockgateConfig, load_config
from lockgate.evals import (
    Case,
    EvalReport,
    ResultsStore,
    Suite,
    Transcript,
    load_suite,
    prompt_version,
    run_suite,
    transcript_from_runs,
)
from lockgate.evals.runner import Progress
from lockgate.inbox.routing import InboxEvent, Router
from lockgate.model.price_table import PriceTable
from lockgate_infra.evals.isolation import isolated_aws
from lockgate_infra.evals.judge_trust import judge_note
from lockgate_infra.evals.models import LOG, EvalSetupError, Models, ModelSpec, parse_model
from lockgate_infra.evals.suites import evals_dirs, find_suite, suite_folder


def _project_root(here: Path) -> Path:
    """The folder holding template.yaml: the repository, or ``/var/task`` in EvalJobsFunction."""
    for folder in here.parents:
        if (folder / "template.yaml").is_file():
            return folder
    raise EvalSetupError(f"no template.yaml above {here}: the eval harness needs the deployment's template")


ROOT = _project_root(Path(__file__).resolve())
WORKER = "AgentWorkerFunction"  # the template's worker: its environment is what register(setup) sees
DEADLINE_SECONDS = 300


@dataclass(frozen=True)
class World:
    """One isolated moto account with the deployment's tables seeded and its tasks registered."""

    session: Any
    names: dict[str, str]
    tasks: dict[str, Task]
    config: LockgateConfig
    environ: dict[str, str]  # the worker's environment in this world


def plan_and_config(
    config_path: Path = ROOT / "lockgate.toml", stage: str | None = None
) -> tuple[Any, LockgateConfig]:
    """The template's plan as the config deploys it (its provider) and the config (``stage``'s overlay
    merged), read once per eval."""
    from lockgate_infra.local.template import LocalPlan, load_template, provider_parameters

    config = load_config(config_path, stage)
    parameters = provider_parameters(config.provider.name)
    return LocalPlan.from_template(load_template(ROOT / "template.yaml"), parameters, base_dir=ROOT), config


@contextmanager
def world(plan: Any, config: LockgateConfig, session: Any) -> Iterator[World]:
    """The template's tables in an emptied moto, the workflows packages registered and seeded.

    Call only inside ``isolated_aws()`` with its session: moto's state is wiped first, so each
    world starts fresh. Only the tables are created (queues, buckets and secrets play no part in
    one run of a task, and creating them would triple the cost of a trial).
    """
    from moto.core.base_backend import BackendDict

    from lockgate.workflows import Setup, load_workflows
    from lockgate_infra.local.provision import create_resources

    BackendDict.reset()
    tables_only = dataclasses.replace(plan, queues={}, buckets={}, secrets={})
    names = create_resources(tables_only, session)
    environ = worker_environment(plan, names)
    setup = Setup(Router(), environ, session.client, mcp_servers=config.mcp, log=LOG)
    load_workflows(config.workflows.packages, setup)
    seed_workflows(config, session.client, names)
    yield World(session, names, {t.name: t for t in setup.tasks}, config, environ)


def worker_environment(plan: Any, names: Mapping[str, str]) -> dict[str, str]:
    """The template's worker environment, on this account's queues, its model key from the environment."""
    environ = dict(plan.functions[WORKER].environment)
    for variable, logical_id in (("INBOX_QUEUE_URL", "InboxQueue"), ("INBOX_DLQ_URL", "InboxDLQ")):
        environ[variable] = names.get(logical_id, environ.get(variable, ""))
    environ.update(ANTHROPIC_API_KEY_REF="env:ANTHROPIC_API_KEY", ANTHROPIC_API_KEY="stub")
    return environ


def workflow_environment(plan: Any, names: Mapping[str, str], packages: Sequence[str]) -> dict[str, str]:
    """The variables the workflows declare (their ``RESOURCES``), as the template's worker sets them here.

    One the template does not set is left out, so loading the workflows says what to add.
    """
    from lockgate.workflows import declared_resources

    environ = worker_environment(plan, names)
    declared = {r.variable for package in packages for r in declared_resources(package)}
    return {name: value for name, value in environ.items() if name in declared}


def seed_workflows(config: LockgateConfig, client: Any, names: Mapping[str, str]) -> None:
    """Seed the stack with each workflows package's ``seed_local`` (the shop's orders), in order."""
    for package in config.workflows.packages:
        seed = getattr(importlib.import_module(package), "seed_local", None)
        if callable(seed):
            seed(client, names)


class TaskTrials:
    """``run_case`` for ``run_suite``: each trial runs a case's events through the real loop in a fresh world.

    Use as a context manager: moto is active for as long as it is open.
    """

    def __init__(
        self,
        suite: Suite,
        model: Any,
        spec: ModelSpec,
        *,
        system: str | None = None,
        config_path: Path = ROOT / "lockgate.toml",
        stage: str | None = None,
    ) -> None:
        self._suite = suite
        self._model = model
        self._spec = spec
        self._system = system
        self._plan, self._config = plan_and_config(config_path, stage)
        self._stack = ExitStack()
        self._session: Any = None
        self.prompt_version = ""
        self.model = ""  # the model id the trials send (the task's own unless the spec names one)

    def __enter__(self) -> TaskTrials:
        self._session = self._stack.enter_context(isolated_aws(self._plan.region))
        with world(self._plan, self._config, self._session) as probe:
            task = self._task(probe)
            self.prompt_version, self.model = prompt_version(*_prompt(task)), task.model
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    @property
    def session(self) -> Any:
        """The boto3 session on moto (to inspect the last trial's tables and mail)."""
        return self._session

    def _task(self, where: World) -> Task:
        task = where.tasks.get(self._suite.task)
        if task is None:
            known = ", ".join(sorted(where.tasks)) or "none"
            raise EvalSetupError(f"no task called {self._suite.task!r} is registered (tasks: {known})")
        if self._spec.behaviour is None:  # real Claude, as the worker calls it: on Bedrock, by its id there
            model = self._spec.model_id or task.model
            self._config.provider.require_model(model, f"--model {self._spec.label}: model")
        if self._spec.model_id:
            PriceTable.for_deployment(self._config).require(
                self._spec.model_id, f"--model {self._spec.label}: model"
            )
            task = dataclasses.replace(task, model=self._spec.model_id)
        if self._system is not None:
            task = dataclasses.replace(task, system=self._system)
        return task

    def __call__(self, case: Case, attempt: int) -> Transcript:
        """Run the case's events in order (each its own run) and collect the evidence."""
        from lockgate.runtime.deps import Deps
        from lockgate.runtime.worker import build_agent
        from lockgate.secrets import SecretResolver
        from lockgate.settings import WorkerSettings
        from lockgate.telemetry import CountingMetrics
        from lockgate.workflows import Setup

        if self._session is None:
            raise RuntimeError("use TaskTrials as a context manager: moto must be active")
        clock = SystemClock()
        with world(self._plan, self._config, self._session) as here:
            task = self._task(here)
            # The worker's own loop, every control as deployed; only the model is the eval's.
            deps = Deps(here.session.client, SecretResolver(here.environ), clock, LOG, CountingMetrics())
            setup = Setup(Router(), here.environ, here.session.client, tasks=[task], clock=clock, log=LOG)
            agent = build_agent(setup, WorkerSettings.from_env(here.environ), here.config, deps, self._model)
            loop, runs = agent.loop, agent.runs
            recorded = []
            for n, body in enumerate(case.events):
                event = self._event(task, case, attempt, n, body, int(clock.now()))
                loop.run(task, event, clock.now() + DEADLINE_SECONDS)
                run = runs.get(event.delivery.pk)
                if run is not None:
                    recorded.append(run)
            return transcript_from_runs(recorded)

    def _event(
        self, task: Task, case: Case, attempt: int, n: int, body: Mapping[str, Any], now: int
    ) -> InboxEvent:
        import json

        delivery_id = f"eval-{re.sub(r'[^A-Za-z0-9]+', '-', case.name).strip('-')[:60]}-{attempt}-{n}"
        data = dict(body)
        if self._suite.id_field and self._suite.id_field not in data:
            data[self._suite.id_field] = delivery_id
        return InboxEvent.claimed(
            task.source, delivery_id, self._suite.event_type, json.dumps(data).encode(), now
        )


def _prompt(task: Task) -> tuple[str, list[dict[str, Any]]]:
    return task.system_prompt(), [t.schema() for t in task.tools]


def eval_prices(config_path: Path = ROOT / "lockgate.toml") -> PriceTable:
    """The deployment's price table (``[models]`` included), as its worker builds it."""
    return PriceTable.for_deployment(load_config(config_path))


def evals_dir(config_path: Path = ROOT / "lockgate.toml") -> Path:
    """The first workflows package's ``evals/`` folder (the shop's, as shipped)."""
    return evals_dirs(config_path)[0]


def run_task_evals(
    task: str,
    *,
    model: str = "shop",
    runs: int = 3,
    gate: float | None = None,
    judge: str = "stub",
    system: str | None = None,
    cases: Path | None = None,
    only: list[str] | None = None,
    results_dir: Path | None = ROOT / ".lockgate" / "evals",
    progress: Progress | None = None,
    environ: Mapping[str, str] | None = None,
) -> EvalReport:
    """Run a task's eval suite on an isolated moto shop; saves the result unless ``results_dir`` is None."""
    import os

    environ = os.environ if environ is None else environ
    suite = load_suite(cases) if cases else find_suite(task, evals_dirs(ROOT / "lockgate.toml"))
    if suite.task != task:
        raise EvalSetupError(f"{suite.origin} is for task {suite.task!r}, not {task!r}")
    if only:
        suite = suite.only(only)
    stage = environ.get("LOCKGATE_STAGE") or None  # the weekly job's: stages/<stage>.toml, as deployed
    config = load_config(ROOT / "lockgate.toml", stage)
    spec = parse_model(model, environ, config.provider)
    LOG.setLevel(logging.ERROR)  # blocked calls are the point of the attack cases, not news
    with ExitStack() as stack:
        models = Models(stack, environ, PriceTable.for_deployment(config), config.provider)
        trials = TaskTrials(suite, models.client(spec.behaviour), spec, system=system, stage=stage)
        stack.enter_context(trials)
        needs_judge = any(c.kind == "judge" for case in suite.cases for c in case.checks)
        grader = models.judge(judge) if needs_judge else None
        report = run_suite(
            suite,
            trials,
            runs=runs,
            gate=gate,
            judge=grader,
            model=f"task ({trials.model})" if spec.label == "task" else spec.label,
            prompt_version=trials.prompt_version,
            judge_name=judge if needs_judge else "",
            progress=progress,
        )
        if grader is not None and judge == "stub":  # the offline judge says what it is worth
            report.notes.append(judge_note(task, grader, suite_folder(suite) or evals_dir()))
    if results_dir is not None:
        ResultsStore(results_dir).save(report)
    return report
