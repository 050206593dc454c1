"""Which model the embedded stack's worker talks to: the offline demo model, the gullible one, or Claude."""

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
    if name not in MODELS:
        raise ModelChoiceError(f"unknown model {name!r}; choose one of {', '.join(MODELS)}")
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

    # The weekly eval (EvalJobsFunction) asks "the model" and a judge: both are answered here.
    model = with_judge(shop_model if name == "demo" else gullible_model)
    with StubAnthropic(model) as stub:
        yield ModelChoice(
            name,
            f"offline {name} model (a local Messages API stub at {stub.base_url})",
            {
                "ANTHROPIC_BASE_URL": stub.base_url,
                "ANTHROPIC_API_KEY_REF": "env:LOCKGATE_STUB_KEY",
                "LOCKGATE_STUB_KEY": STUB_KEY,
            },
            stub,
        )
