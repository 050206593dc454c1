"""Which model an eval talks to: an offline stub behaviour through the real SDK, or real Claude.

Model specs: ``shop`` (alias ``demo``) and ``gullible`` are the stub behaviours, answering as the
task's own model id; ``shop@claude-haiku-5-5`` is a stub behaviour answering as (and priced as)
that model id; ``claude-…`` is real Claude, and ``task`` is real Claude as the task's own model
(what the deployed weekly eval uses), both on the deployment's ``[provider]`` as its worker calls
it: Anthropic's API needs ``ANTHROPIC_API_KEY``; Bedrock and Claude Platform on AWS sign with AWS
credentials (``lockgate_infra.evals.signing``). Judges: ``stub`` (the
offline judge in ``stub/judge.py``), ``literal`` (that judge before calibration: the rubric's
words as written, the baseline calibration compares against) or a ``claude-…`` id.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

from lockgate.clock import SystemClock
from lockgate.config import ProviderConfig
from lockgate.evals import ModelJudge
from lockgate.model.client import ModelClient, ModelReply, ModelRequest
from lockgate.model.errors import ModelError
from lockgate.model.price_table import PriceTable
from lockgate.model.sdk import sdk_factory
from lockgate_infra.evals.signing import signing_keys
from lockgate_infra.stub.factory import is_factory_spec

ANTHROPIC_API = ProviderConfig()
STUB_JUDGE_MODEL = "claude-haiku-5-5"  # the id the offline judge answers as (it is priced as this)
# Outside the "lockgate" logger's tree: where a function's Powertools logger of that name is set up in
# the same process (the tests), the rigs' records would go to stdout, in the middle of eval's report.
LOG = logging.getLogger("lockgate_infra.evals")


class EvalSetupError(Exception):
    """The eval cannot start: unknown task or model, missing API key, no case file."""


class ModelUnavailable(EvalSetupError):
    """A model call failed (unreachable, refused, overloaded): the eval measured nothing, it could not run."""


class EvalModelClient(ModelClient):
    """A ModelClient whose failures stop the eval, rather than score as the model's own failed trials."""

    def create(self, request: ModelRequest, deadline: float) -> ModelReply:
        """One reply, or ModelUnavailable: an outage says nothing about how good the model is."""
        try:
            return super().create(request, deadline)
        except ModelError as exc:
            # What grants access differs by provider: the key, or the AWS credentials' permission.
            access = "ANTHROPIC_API_KEY" if self.provider_name == "anthropic" else "your AWS model access"
            raise ModelUnavailable(
                f"could not run: the model API call failed ({exc}); nothing was scored. "
                f"Check your network, ANTHROPIC_BASE_URL and {access}, then run it again"
            ) from exc


@dataclass(frozen=True)
class ModelSpec:
    """A model to evaluate: a stub behaviour (``behaviour``) or real Claude (``behaviour`` None)."""

    label: str
    behaviour: str | None
    model_id: str | None  # the id sent in requests; None: the task's own


def parse_model(spec: str, environ: Mapping[str, str], provider: ProviderConfig = ANTHROPIC_API) -> ModelSpec:
    """``shop``, ``gullible``, ``package.module:factory`` (your own offline model), ``BEHAVIOUR@MODEL_ID``
    or a real ``claude-…`` id (on Anthropic's API it needs the key; the AWS providers sign instead)."""
    behaviour, _, model_id = spec.partition("@")
    behaviour = "shop" if behaviour == "demo" else behaviour
    if behaviour in ("shop", "gullible") or is_factory_spec(behaviour):
        if model_id and not model_id.startswith("claude-"):
            raise EvalSetupError(f"{spec!r}: the model id after '@' must look like claude-…")
        return ModelSpec(spec, behaviour, model_id or None)
    if (spec == "task" or spec.startswith("claude-")) and not model_id:
        if provider.uses_api_key and not environ.get("ANTHROPIC_API_KEY"):
            raise EvalSetupError(f"--model {spec} needs ANTHROPIC_API_KEY; offline, use shop or gullible")
        return ModelSpec(spec, None, None if spec == "task" else spec)
    raise EvalSetupError(
        f"unknown model {spec!r}: use shop, gullible, your own as package.module:factory, "
        "shop@claude-… (a stub priced as that model), task (real Claude, the task's own model) or claude-…"
    )


class Models:
    """The model clients an eval needs: one local stub server per behaviour, or the real API."""

    def __init__(
        self,
        stack: ExitStack,
        environ: Mapping[str, str],
        prices: PriceTable,
        provider: ProviderConfig = ANTHROPIC_API,
    ) -> None:
        self._stack = stack
        self._environ = environ
        self._prices = prices  # the deployment's: what the judge's calls cost
        self._provider = provider  # the deployment's: who answers real Claude, as its worker calls it
        self._stubs: dict[str, Any] = {}

    def client(self, behaviour: str | None) -> Any:
        """A ModelClient for a stub behaviour (shop, gullible, judge) or, for None, real Claude.

        Real Claude is the deployment's provider, through the worker's SDK factory; on an AWS
        provider signed with credentials read now, before the trials' moto hides them.
        """
        from lockgate_infra.stub.client import stub_client

        if behaviour is None:
            provider, environ = self._provider, self._environ
            key = (lambda: environ["ANTHROPIC_API_KEY"]) if provider.uses_api_key else None
            keys = None if provider.uses_api_key else signing_keys(environ)
            sdk = sdk_factory(provider, key, environ.get("ANTHROPIC_BASE_URL") or None, keys)
            return EvalModelClient(sdk, SystemClock(), LOG, provider=provider)
        stub = self._stub(behaviour)
        return EvalModelClient(
            lambda: stub_client(stub.base_url),
            SystemClock(),
            LOG,
        )

    def judge(self, name: str) -> ModelJudge:
        """The offline judge ("stub"; "literal" before calibration), or Claude ("claude-…", needs the key)."""
        if name in ("stub", "literal"):
            behaviour = "judge" if name == "stub" else "literal-judge"
            return ModelJudge(self.client(behaviour), STUB_JUDGE_MODEL, SystemClock(), prices=self._prices)
        if name.startswith("claude-"):
            self._prices.require(name, "--judge: model")  # ConfigError: exit 2, one line
            self._provider.require_model(name, "--judge: model")  # a Bedrock id, on Bedrock
            if self._provider.uses_api_key and not self._environ.get("ANTHROPIC_API_KEY"):
                raise EvalSetupError(f"--judge {name} needs ANTHROPIC_API_KEY; offline, use --judge stub")
            return ModelJudge(self.client(None), name, SystemClock(), prices=self._prices)
        raise EvalSetupError(f"unknown judge {name!r}: use stub, literal or a claude-… model id")

    def _stub(self, behaviour: str) -> Any:
        from lockgate_infra.stub import Model, StubAnthropic, judge_model
        from lockgate_infra.stub.factory import EXAMPLE_MODELS
        from lockgate_infra.stub.judge import literal_judge_model

        if behaviour not in self._stubs:
            behaviours: dict[str, Model] = {"judge": judge_model, "literal-judge": literal_judge_model}
            model = behaviours.get(behaviour) or _your_model(EXAMPLE_MODELS.get(behaviour, behaviour))
            self._stubs[behaviour] = self._stack.enter_context(StubAnthropic(model))
        return self._stubs[behaviour]


def _your_model(spec: str) -> Any:
    """The model ``package.module:factory`` returns; its problems stop the eval in one line."""
    from lockgate_infra.stub.factory import ModelFactoryError, load_model

    try:
        return load_model(spec)
    except ModelFactoryError as exc:
        raise EvalSetupError(str(exc)) from exc
