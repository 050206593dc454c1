"""What workflow authors import: ``from lockgate import ...``, loaded only when asked for."""

from __future__ import annotations

import subprocess
import sys

import pytest

import lockgate


def test_every_public_name_resolves_to_the_object_its_module_defines() -> None:
    import importlib

    for name in lockgate.__all__:
        value = getattr(lockgate, name)
        module = importlib.import_module(lockgate._PUBLIC[name])  # noqa: SLF001
        assert value is getattr(module, name)


def test_an_unknown_name_is_an_attribute_error_naming_it() -> None:
    with pytest.raises(AttributeError, match="Nope"):
        lockgate.Nope  # noqa: B018


def test_importing_a_submodule_pays_for_no_public_name() -> None:
    # Given a fresh interpreter that imports what the receiver imports
    code = "import sys, lockgate.inbox.receipt; print('pydantic' in sys.modules, 'anthropic' in sys.modules)"
    # Then neither pydantic nor the model SDK came with it
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_last_releases_import_paths_still_work_for_one_release() -> None:
    from lockgate.agent.tools import Tool as OldTool
    from lockgate.routing import InboxEvent as OldEvent

    assert OldTool is lockgate.Tool and OldEvent is lockgate.InboxEvent
