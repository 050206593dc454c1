"""One seam below every boto3 adapter: wrap each AWS API call the process makes.

``BaseClient._make_api_call`` is where every client call ends up after botocore's own retries,
so a wrapper there sees the call as our code does. The chaos harness injects faults there, the
cost model meters there, the load benchmark times there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from botocore.client import BaseClient

# (client, operation name, parameters, send) -> result; ``send()`` makes the real call.
Wrapper = Callable[[Any, str, dict[str, Any], Callable[[], Any]], Any]


@contextmanager
def intercepted(wrapper: Wrapper) -> Iterator[None]:
    """Route every botocore API call in this process through ``wrapper`` while inside."""
    original = BaseClient._make_api_call  # type: ignore[attr-defined]  # noqa: SLF001

    def call(client: Any, operation: str, params: dict[str, Any]) -> Any:
        return wrapper(client, operation, params, lambda: original(client, operation, params))

    BaseClient._make_api_call = call  # type: ignore[attr-defined]  # noqa: SLF001
    try:
        yield
    finally:
        BaseClient._make_api_call = original  # type: ignore[attr-defined]  # noqa: SLF001
