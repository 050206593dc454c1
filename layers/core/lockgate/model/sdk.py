"""The real Anthropic SDK client, made only when a task first calls the model."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


def anthropic_factory(api_key: Callable[[], str], base_url: str | None) -> Callable[[], Any]:
    """A factory for the real SDK client; the key is read when the first client is made."""

    def make() -> Any:
        import anthropic  # only the worker pays for this import, and only when a task runs

        # Our ModelClient owns timeouts and retries; the SDK's defaults would outlive the Lambda.
        return anthropic.Anthropic(api_key=api_key(), base_url=base_url, max_retries=0, timeout=60.0)

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
