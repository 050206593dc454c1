"""Which model the embedded stack's worker talks to: an offline model (the demo's, the gullible one, or
yours, ``package.module:factory``) behind a local Messages API stub, or Claude."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lockgate_infra.stub import StubAnthropic

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
def local_model(name: str | None, environ: Mapping[str, str]) -> Iterator[ModelChoice]:
    """Start what the choice needs (a local stub server) for as long as the stack runs."""
    if name is None:
        name = "claude" if environ.get("ANTHROPIC_API_KEY") else "demo"
    from lockgate_infra.stub.factory import ModelFactoryError, is_factory_spec, load_model

    if name not in MODELS and not is_factory_spec(name):
        raise ModelChoiceError(
            f"unknown model {name!r}; choose one of {', '.join(MODELS)}, "
            "or your own as package.module:factory"
        )
    if name == "claude":
        if not environ.get("ANTHROPIC_API_KEY"):
            raise ModelChoiceError("--model claude needs ANTHROPIC_API_KEY in the environment")
        yield ModelChoice(
            name,
            "Claude through the Anthropic API (ANTHROPIC_API_KEY)",
            {"ANTHROPIC_API_KEY_REF": "env:ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL": ""},
        )
        return
    from lockgate_infra.stub import StubAnthropic, gullible_model, shop_model, with_judge

    if is_factory_spec(name):
        try:
            chosen = load_model(name)
        except ModelFactoryError as exc:
            raise ModelChoiceError(str(exc)) from exc
        label = f"your model {name}"
    else:
        chosen, label = (shop_model if name == "demo" else gullible_model), f"offline {name} model"
    # The weekly eval (EvalJobsFunction) asks "the model" and a judge: both are answered here.
    with StubAnthropic(with_judge(chosen)) as stub:
        yield ModelChoice(
            name,
            f"{label} (a local Messages API stub at {stub.base_url})",
            {
                "ANTHROPIC_BASE_URL": stub.base_url,
                "ANTHROPIC_API_KEY_REF": "env:LOCKGATE_STUB_KEY",
                "LOCKGATE_STUB_KEY": STUB_KEY,
            },
            stub,
        )
