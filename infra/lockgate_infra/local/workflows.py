"""Prepare the deployment's workflows package on the embedded stack (seed data, verified senders)."""

from __future__ import annotations

import importlib

from lockgate.config import load_config
from lockgate_infra.local.stack import LocalStack


def seed_workflows(stack: LocalStack) -> bool:
    """Call the workflows package's optional ``seed_local(client, resources)``; True if it had one."""
    package = load_config(stack.config_path).workflows_package
    if not package:
        return False
    module = importlib.import_module(package)
    seed = getattr(module, "seed_local", None)
    if not callable(seed):
        return False
    seed(stack.client, stack.resources)
    return True
