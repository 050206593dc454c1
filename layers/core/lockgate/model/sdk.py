"""The real SDK client for the deployment's provider, made only when a task first calls the model.

Each provider is the SDK's own client (``lockgate.model.providers``), so request shapes, signing,
headers and error classes are the SDK's. Timeouts and retries are ours on every one of them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lockgate.config.provider import ProviderConfig

if TYPE_CHECKING:
    from anthropic import OpenTelemetryOptions

SDK_TIMEOUT_SECONDS = 60.0  # ModelClient sets each call's own timeout; this is the ceiling
# The SDK's own span of each call (under Lockgate's chat span) stays metadata only, whatever its
# ANTHROPIC_OPEN_TELEMETRY_* variables say: no prompt or reply in a trace (docs/operate.md, Traces).
SDK_TELEMETRY: OpenTelemetryOptions = {"traces": {"content_mode": "metadata_only"}}


@dataclass(frozen=True)
class AwsKeys:
    """Credentials an AWS provider's calls are signed with, given outright instead of the default chain.

    For a process whose default chain is not the role's: the eval's sandbox, where moto replaces
    the environment's credentials with fake ones (``lockgate_infra.evals.signing``).
    """

    access_key: str = field(repr=False)
    secret_key: str = field(repr=False)
    session_token: str | None = field(default=None, repr=False)
    region: str | None = None  # None: the provider's region, else the SDK's (AWS_REGION)


def anthropic_factory(api_key: Callable[[], str], base_url: str | None) -> Callable[[], Any]:
    """A factory for the Anthropic API's client; the key is read when the first client is made."""
    return sdk_factory(ProviderConfig(), api_key, base_url)


def sdk_factory(
    provider: ProviderConfig,
    api_key: Callable[[], str] | None,
    base_url: str | None,
    aws_keys: AwsKeys | None = None,
) -> Callable[[], Any]:
    """A factory for ``provider``'s SDK client; ``api_key`` is read (Anthropic's API only) on first use.

    ``base_url`` replaces the provider's endpoint (the local stub); None: the SDK's own, which
    for the AWS providers is derived from the region. ``aws_keys`` signs the AWS providers' calls;
    None: the default AWS chain (the function's role).
    """

    def make() -> Any:
        import anthropic  # only the worker pays for this import, and only when a task runs

        # Our ModelClient owns timeouts and retries; the SDK's defaults (600 s, 2 retries)
        # would outlive the Lambda. Region None: the SDK takes AWS_REGION, the function's own.
        common: dict[str, Any] = {
            "base_url": base_url,
            "max_retries": 0,
            "timeout": SDK_TIMEOUT_SECONDS,
            "open_telemetry": SDK_TELEMETRY,
        }
        if provider.name != "anthropic":
            common["aws_region"] = provider.region or (aws_keys.region if aws_keys else None)
            if aws_keys is not None:  # else the role's, from the default chain
                common.update(aws_access_key=aws_keys.access_key, aws_secret_key=aws_keys.secret_key,
                              aws_session_token=aws_keys.session_token)  # fmt: skip
        if provider.name == "bedrock":
            return anthropic.AnthropicBedrock(**common)  # SigV4 for the service bedrock
        if provider.name == "aws":
            return anthropic.AnthropicAWS(workspace_id=provider.workspace_id, **common)
        if api_key is None:
            raise ValueError("the Anthropic API needs an API key")
        return anthropic.Anthropic(api_key=api_key(), **common)

    return make


class LazySdk:
    """The SDK client made on first use and kept (Message Batches calls); the key is read then."""

    def __init__(self, factory: Callable[[], Any]) -> None:
        self._factory = factory
        self._client: Any = None
        self._lock = threading.Lock()  # records of one batch run in threads: make the client once

    def __call__(self) -> Any:
        """The client, made now if this is the first call."""
        with self._lock:
            if self._client is None:
                self._client = self._factory()
            return self._client
