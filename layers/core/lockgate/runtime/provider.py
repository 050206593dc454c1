"""The model client for the deployment's provider, and the provider checked against what the worker runs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lockgate.agent.tasks import require_provider_models
from lockgate.config import LockgateConfig
from lockgate.errors import ConfigError
from lockgate.model.client import ModelClient
from lockgate.model.providers import provider as provider_named
from lockgate.model.retrybudget import RetryBudget
from lockgate.model.sdk import sdk_factory
from lockgate.runtime.deps import Deps
from lockgate.settings import WorkerSettings
from lockgate.workflows import Setup


def require_provider(setup: Setup, settings: WorkerSettings, config: LockgateConfig) -> None:
    """ConfigError at start when ``[provider]`` cannot serve this deployment, saying what to change.

    The template's ModelProvider (whose IAM the role has) must be lockgate.toml's; every task's
    model needs a Bedrock id on Bedrock; ``[capacity] count_tokens`` needs the count endpoint.
    """
    provider = config.provider
    if settings.model_provider is not None and settings.model_provider != provider.name:
        raise ConfigError(
            f'lockgate.toml [provider] name is "{provider.name}" but the stack was deployed with '
            f"ModelProvider={settings.model_provider}: its role has that provider's permissions only. "
            "Set the one in samconfig.toml (parameter_overrides) and lockgate.toml (or the stage's) alike"
        )
    require_provider_models(setup.tasks, provider, setup.workflow_of)
    if config.capacity.count_tokens and not provider_named(provider.name).token_counting:
        raise ConfigError(
            f"lockgate.toml [capacity] count_tokens = true, but {provider_named(provider.name).title} has no "
            "token counting endpoint: remove it (prompts are then measured by Lockgate's cautious estimate)"
        )


def model_client(
    settings: WorkerSettings, config: LockgateConfig, deps: Deps, sdk: Callable[[], Any] | None = None
) -> ModelClient:
    """The model client as deployed; ``sdk`` replaces the SDK factory (a harness's recording stub)."""
    clock = deps.clock
    provider = config.provider
    # The AWS providers sign with the role: no key is read, none needs to exist.
    key = (lambda: deps.secrets.resolve(settings.model_key_ref)) if provider.uses_api_key else None
    return ModelClient(
        sdk or sdk_factory(provider, key, settings.model_base_url),
        clock,
        deps.log,
        sleep=deps.sleep,
        # One budget per process, shared by every task it runs (see lockgate.model.client); the
        # floor lets a quiet process still retry a few times a minute.
        retry_budget=RetryBudget(config.capacity.retry_budget_ratio, min_retries_per_minute=10, clock=clock),
        metrics=deps.metrics,
        provider=provider,
    )
