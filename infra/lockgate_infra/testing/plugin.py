"""Lockgate's pytest plugin: ``lockgate_stack`` and ``lockgate_model`` for testing your workflow.

Registered under ``pytest11`` (pyproject.toml), so a test names the fixture and gets it::

    @pytest.fixture
    def lockgate_model():
        return triage_model()          # your ScriptedModel

    def test_a_crash_report_gets_the_bug_label(lockgate_stack):
        lockgate_stack.send("github", {...}, event="issues")
        assert lockgate_stack.ledger.ran("add_label")
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:  # loaded only when a test asks for a fixture: every pytest run loads this plugin
    from lockgate_infra.stub import Model
    from lockgate_infra.testing.stack import TestStack


@pytest.fixture
def lockgate_model() -> Model:
    """The model your tasks talk to in ``lockgate_stack``; override this fixture to give yours.

    The default: every workflow in the checkout's lockgate.toml with an offline model of its own
    (``NAME.model:scripted_model``, as the scaffold writes it), each answering its own tasks.
    """
    from lockgate_infra.local.model import workflow_models
    from lockgate_infra.local.stack import default_template_path

    return workflow_models(default_template_path().parent / "lockgate.toml")


@pytest.fixture
def lockgate_environment() -> dict[str, str]:
    """Variables set in every function's environment in ``lockgate_stack``; override this fixture to
    point your adapters at stand-ins (``{"PAYMENTS_API_URL": payments.url}``). The default: none."""
    return {}


@pytest.fixture
def lockgate_stack(lockgate_model: Model, lockgate_environment: dict[str, str]) -> Iterator[TestStack]:
    """A started ``TestStack`` with ``lockgate_model`` and ``lockgate_environment``: your workflows on a
    fresh embedded stack."""
    from lockgate_infra.testing.stack import TestStack

    with TestStack(lockgate_model, environment=lockgate_environment) as stack:
        yield stack
