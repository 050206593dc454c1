"""The deployment's model provider checked against what the worker runs, when it starts."""

from __future__ import annotations

from lockgate.agent.tasks import require_provider_models
from lockgate.config import LockgateConfig
from lockgate.errors import ConfigError
from lockgate.model.providers import provider as provider_named
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
