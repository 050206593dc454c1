"""Running a handler the way Lambda does: imported once, called with a context, JSON in and out."""

from __future__ import annotations

import importlib.util
import itertools
import json
import logging
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from lockgate_infra.local.console import inside
from lockgate_infra.local.functions import FunctionPlan
from lockgate_infra.local.log_keys import FunctionKeys

log = logging.getLogger("lockgate_infra.local")
_module_numbers = itertools.count(1)


class FunctionError(RuntimeError):
    """The handler could not be loaded, or its response is not what Lambda would accept."""


@dataclass
class LambdaContext:
    """The context object a Python Lambda handler receives."""

    function_name: str
    invoked_function_arn: str
    memory_limit_in_mb: int
    aws_request_id: str
    timeout_seconds: int
    function_version: str = "$LATEST"
    log_group_name: str = ""
    log_stream_name: str = "local"
    identity: Any = None
    client_context: Any = None
    _deadline: float = field(default=0.0, repr=False)

    def __post_init__(self) -> None:
        self.log_group_name = self.log_group_name or f"/aws/lambda/{self.function_name}"
        self._deadline = time.monotonic() + self.timeout_seconds

    def get_remaining_time_in_millis(self) -> int:
        """Milliseconds left before Lambda would stop this invocation."""
        return max(0, int((self._deadline - time.monotonic()) * 1000))


def import_handler_module(plan: FunctionPlan) -> ModuleType:
    """Import ``<CodeUri>/<module>.py`` under a unique name (every handler file is called app.py)."""
    path = plan.module_path
    if not path.is_file():
        raise FunctionError(f"{plan.logical_id}: handler file {path} does not exist (Handler {plan.handler})")
    # Lambda runs the handler with its code folder on the path (/var/task): what the function ships
    # there (a workflows package linked into functions/agent_worker/) is importable, as deployed.
    folder = str(plan.code_dir)
    if folder not in sys.path:
        sys.path.append(folder)
    name = f"lockgate_local_{plan.logical_id}_{next(_module_numbers)}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise FunctionError(f"{plan.logical_id}: cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look modules up here
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


class LocalFunction:
    """A loaded handler; ``invoke`` is one Lambda invocation."""

    def __init__(self, plan: FunctionPlan, module: ModuleType, keys: FunctionKeys | None = None) -> None:
        handler = getattr(module, plan.handler_name, None)
        if not callable(handler):
            raise FunctionError(f"{plan.logical_id}: {plan.module_path} has no function {plan.handler_name}")
        self.plan = plan
        self.module = module
        self.handler: Callable[[Any, Any], Any] = handler
        self.keys = keys or FunctionKeys()  # its log keys between invocations (local/log_keys.py)
        self._lock = threading.Lock()
        self.invocations = 0

    def context(self, request_id: str | None = None) -> LambdaContext:
        """A fresh context whose clock starts now."""
        return LambdaContext(
            function_name=self.plan.name,
            invoked_function_arn=self.plan.arn,
            memory_limit_in_mb=self.plan.memory_mb,
            aws_request_id=request_id or str(uuid.uuid4()),
            timeout_seconds=self.plan.timeout,
        )

    def invoke(self, event: Any, request_id: str | None = None) -> Any:
        """Call the handler with a JSON copy of ``event``; return its JSON-round-tripped response."""
        payload = json.loads(json.dumps(event))  # the handler gets its own copy, as over the wire
        context = self.context(request_id)
        with self._lock:
            self.invocations += 1
            cold = self.invocations == 1
        started = time.monotonic()
        try:
            # What the handler prints is its log (local/console.py), and its log keys are its own.
            with inside(self.plan.logical_id), self.keys.invocation(cold):
                result = self.handler(payload, context)
        finally:
            elapsed = time.monotonic() - started
            if elapsed > self.plan.timeout:
                log.warning(
                    "%s ran %.1f s, longer than its Timeout of %d s: Lambda would have stopped it",
                    self.plan.logical_id,
                    elapsed,
                    self.plan.timeout,
                )
        try:
            return json.loads(json.dumps(result))
        except (TypeError, ValueError) as exc:
            raise FunctionError(f"{self.plan.logical_id}: response is not JSON-serialisable: {exc}") from exc
