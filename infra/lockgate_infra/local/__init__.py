"""The embedded local stack: moto on loopback, an HTTP API gateway and SQS pollers, all from template.yaml.

Names are imported lazily so that reading a template does not start importing moto.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "LocalStack": "lockgate_infra.local.stack",
    "Gateway": "lockgate_infra.local.gateway",
    "SqsPoller": "lockgate_infra.local.poller",
    "StreamPoller": "lockgate_infra.local.streams",
    "LambdaContext": "lockgate_infra.local.runtime",
    "LocalFunction": "lockgate_infra.local.runtime",
    "run_local": "lockgate_infra.local.run",
    "read_local_state": "lockgate_infra.local.run",
    "state_path": "lockgate_infra.local.run",
}
__all__ = [
    "Gateway",
    "LambdaContext",
    "LocalFunction",
    "LocalStack",
    "SqsPoller",
    "StreamPoller",
    "read_local_state",
    "run_local",
    "state_path",
]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
