"""Which model the embedded stack's worker talks to: an offline model (the demo's, the gullible one, or
yours, ``package.module:factory``) behind a local Messages API stub, or Claude."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lockgate_infra.stub import Model, StubAnthropic

MODELS = ("demo", "gullible", "claude")
STUB_KEY = "local-stub-key"  # the stub checks that a key is sent, not which


class ModelChoiceError(ValueError):
    """The requested model cannot be used (e.g. claude without ANTHROPIC_API_KEY)."""


@dataclass(frozen=True)
class ModelChoice:
    """The chosen model and the worker environment that points at it."""

    name: str
    description: str
    environment: dict[str, str] = field(default_factory=dict)
    stand_in: StubAnthropic | None = None  # the local Messages API server, when the model is offline


@contextmanager
def local_model(
    name: str | Sequence[str] | None,
    environ: Mapping[str, str],
    provider: str = "anthropic",
    *,
    config_path: Path | None = None,
) -> Iterator[ModelChoice]:
    """Start what the choice needs (a local stub server) for as long as the stack runs.

    Several offline models (``["demo", "triage.model:scripted_model"]``) answer together: each
    request goes to the first written for its task. With ``config_path``, the demo model (the
    default) brings each other configured workflow's own offline model along
    (``NAME.model:scripted_model``), so every example task has its model. On an AWS ``provider`` the
    stub answers: real Claude there needs AWS itself, which a local stack never calls.
    """
    names = [name] if isinstance(name, str) else list(name or [])
    if not names:
        names = ["claude" if environ.get("ANTHROPIC_API_KEY") and provider == "anthropic" else "demo"]
    if "claude" in names:
        if provider != "anthropic":
            raise ModelChoiceError(
                f"--model claude calls Anthropic's API; on provider {provider} the local stack's model is "
                "the offline stub: give an offline --model (demo, gullible or yours)"
            )
        if len(names) > 1:
            raise ModelChoiceError("--model claude cannot be combined with offline models: give it alone")
        if not environ.get("ANTHROPIC_API_KEY"):
            raise ModelChoiceError("--model claude needs ANTHROPIC_API_KEY in the environment")
        yield ModelChoice(
            "claude",
            "Claude through the Anthropic API (ANTHROPIC_API_KEY)",
            {"ANTHROPIC_API_KEY_REF": "env:ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL": ""},
        )
        return
    from lockgate_infra.stub import StubAnthropic, with_judge
    from lockgate_infra.stub.replies import FirstWrittenFor

    offline = [_offline(n) for n in names]
    models, labels = [model for model, _ in offline], [label for _, label in offline]
    if "demo" in names and config_path is not None:
        models, labels = _with_workflows_own(names, models, labels, config_path)
    chosen = models[0] if len(models) == 1 else FirstWrittenFor(models)
    # The weekly eval (EvalJobsFunction) asks "the model" and a judge: both are answered here.
    with StubAnthropic(with_judge(chosen)) as stub:
        yield ModelChoice(
            ", ".join(names),
            f"{' and '.join(labels)} (a local Messages API stub at {stub.base_url})",
            {
                "ANTHROPIC_BASE_URL": stub.base_url,
                "ANTHROPIC_API_KEY_REF": "env:LOCKGATE_STUB_KEY",
                "LOCKGATE_STUB_KEY": STUB_KEY,
            },
            stub,
        )


def _offline(name: str) -> tuple[Model, str]:
    """One offline model and how the banner names it."""
    from lockgate_infra.stub.factory import EXAMPLE_MODELS, ModelFactoryError, is_factory_spec, load_model

    if name in ("demo", "gullible"):  # the example shop's: its package builds them
        try:
            return load_model(EXAMPLE_MODELS[name]), f"offline {name} model"
        except ModelFactoryError as exc:
            raise ModelChoiceError(f"--model {name} is the example shop's model: {exc}") from exc
    if not is_factory_spec(name):
        raise ModelChoiceError(
            f"unknown model {name!r}; choose one of {', '.join(MODELS)}, "
            "or your own as package.module:factory"
        )
    try:
        return load_model(name), f"your model {name}"
    except ModelFactoryError as exc:
        raise ModelChoiceError(str(exc)) from exc


def _with_workflows_own(
    names: list[str], models: list[Model], labels: list[str], config_path: Path
) -> tuple[list[Model], list[str]]:
    """The demo model's company: each configured workflow's own offline model not named already."""
    from lockgate_infra.stub.factory import EXAMPLE_MODELS, ModelFactoryError, load_model
    from lockgate_infra.workflow_path import first_on_path

    named = {EXAMPLE_MODELS.get(n, n) for n in names}
    specs = [spec for spec in workflow_model_specs(config_path) if spec not in named]
    if not specs:
        return models, labels
    with first_on_path(config_path.parent / "workflows"):
        try:
            models = [*models, *(load_model(spec) for spec in specs)]
        except ModelFactoryError as exc:
            raise ModelChoiceError(str(exc)) from exc
    owners = " and ".join(spec.partition(".")[0] for spec in specs)
    whose = "workflows'" if len(specs) > 1 else "workflow's"
    labels[names.index("demo")] += f", with the {owners} {whose} own"
    return models, labels


def workflow_model_specs(config_path: Path) -> list[str]:
    """Each configured workflow's own offline model, ``NAME.model:scripted_model``, where its package
    has one (the scaffold writes it), in the config's order."""
    import importlib.util

    from lockgate.config import load_config
    from lockgate_infra.workflow_path import first_on_path

    if not config_path.is_file():
        return []
    with first_on_path(config_path.parent / "workflows"):
        return [
            f"{package}.model:scripted_model"
            for package in load_config(config_path).workflows.packages
            if importlib.util.find_spec(f"{package}.model") is not None
        ]


def workflow_models(config_path: Path) -> Model:
    """Every configured workflow's own offline model, together: each request goes to the one written
    for its task. A workflow's is ``NAME.model:scripted_model``, where its package has one (the
    scaffold writes it); ModelChoiceError when none has."""
    from lockgate_infra.stub.factory import ModelFactoryError, load_model
    from lockgate_infra.stub.replies import FirstWrittenFor
    from lockgate_infra.workflow_path import first_on_path

    models = []
    with first_on_path(config_path.parent / "workflows"):
        for spec in workflow_model_specs(config_path):
            try:
                models.append(load_model(spec))
            except ModelFactoryError as exc:
                raise ModelChoiceError(str(exc)) from exc
    if not models:
        raise ModelChoiceError(
            f"no workflow in {config_path} has an offline model (NAME/model.py with scripted_model()): "
            "give one, or define the lockgate_model fixture"
        )
    return models[0] if len(models) == 1 else FirstWrittenFor(models)
