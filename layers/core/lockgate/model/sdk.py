"""The real SDK client for the deployment's provider, made only when a task first calls the model.

Each provider is the SDK's own client (``lockgate.model.providers``), so request shapes, signing,
headers and error classes are the SDK's. Timeouts and retries are ours on every one of them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lockgate.config.provider import ProviderConfig

if TYPE_CHECKING:
    from anthropic import OpenTelemetryOptions

SDK_TIMEOUT_SECONDS = 60.0  # ModelClient sets each call's own timeout; this is the ceiling
# The SDK's own span of each call (under Lockgate's chat span) stays metadata only, whatever its
# ANTHROPIC_OPEN_TELEMETRY_* variables say: no prompt or reply in a trace (docs/operate.md, Traces).
SDK_TELEMETRY: OpenTelemetryOptions = {"traces": {"content_mode": "metadata_only"}}


def anthropic_factory(api_key: Callable[[], str], base_url: str | None) -> Callable[[], Any]:
    """A factory for the Anthropic API's client; the key is read when the first client is made."""
    return sdk_factory(ProviderConfig(), api_key, base_url)


def sdk_factory(
    provider: ProviderConfig, api_key: Callable[[], str] | None, base_url: str | None
) -> Callable[[], Any]:
    """A factory for ``provider``'s SDK client; ``api_key`` is read (Anthropic's API only) on first use.

    ``base_url`` replaces the provider's endpoint (the local stub); None: the SDK's own, which
    for the AWS providers is derived from the region.
    """

    def make() -> Any:
        import anthropic  # only the worker pays for this import, and only when a task runs

        # Our ModelClient owns timeouts and retries; the SDK's defaults (600 s, 2 retries)
        # would outlive the Lambda.
        if provider.name == "bedrock":
            # Credentials come from the role (the default AWS chain) and are signed with SigV4.
            # aws_region None: the SDK takes AWS_REGION, which Lambda sets to the function's own.
            return anthropic.AnthropicBedrock(
                aws_region=provider.region,
                base_url=base_url,
                max_retries=0,
                timeout=SDK_TIMEOUT_SECONDS,
                open_telemetry=SDK_TELEMETRY,
            )
        if provider.name == "aws":
            return anthropic.AnthropicAWS(
                aws_region=provider.region,
                workspace_id=provider.workspace_id,
                base_url=base_url,
                max_retries=0,
                timeout=SDK_TIMEOUT_SECONDS,
                open_telemetry=SDK_TELEMETRY,
            )
        if api_key is None:
            raise ValueError("the Anthropic API needs an API key")
        return anthropic.Anthropic(
            api_key=api_key(),
            base_url=base_url,
            max_retries=0,
            timeout=SDK_TIMEOUT_SECONDS,
            open_telemetry=SDK_TELEMETRY,
        )

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
