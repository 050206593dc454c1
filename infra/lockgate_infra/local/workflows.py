"""Prepare the deployment's workflows packages on the embedded stack (seed data, verified senders)."""

from __future__ import annotations

import importlib

from lockgate.config import load_config
from lockgate_infra.local.stack import LocalStack
from lockgate_infra.workflow_path import first_on_path


def seed_workflows(stack: LocalStack) -> list[str]:
    """Call each workflows package's optional ``seed_local(client, resources)``, in the config's order.

    Returns the packages that had one.
    """
    seeded = []
    # The checkout's workflows/ first, as the CLI has it: a script or benchmark run with `python -m`
    # would otherwise find only the packages installed into the venv.
    with first_on_path(stack.root / "workflows"):
        for package in load_config(stack.config_path).workflows.packages:
            seed = getattr(importlib.import_module(package), "seed_local", None)
            if callable(seed):
                seed(stack.client, stack.resources)
                seeded.append(package)
    return seeded
