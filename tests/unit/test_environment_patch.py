"""EnvironmentPatch: a process's stacks point its environment at their moto and undo it exactly,
whatever order they stop in."""

from __future__ import annotations

import os

import pytest

from lockgate_infra.local.environment import EnvironmentPatch

KEY = "LOCKGATE_TEST_ENDPOINT"


@pytest.fixture(autouse=True)
def _clean() -> None:
    os.environ.pop(KEY, None)


def test_stacks_stopped_in_reverse_order_leave_the_environment_as_it_was() -> None:
    first, second = EnvironmentPatch(), EnvironmentPatch()
    first.set(KEY, "http://first")
    second.set(KEY, "http://second")
    second.restore()
    assert os.environ[KEY] == "http://first"
    first.restore()
    assert KEY not in os.environ


def test_the_first_stack_stopping_leaves_the_second_pointing_at_its_own_moto() -> None:
    # Given a module's shared stack, then a test's own stack started while it runs
    shared, own = EnvironmentPatch(), EnvironmentPatch()
    os.environ[KEY] = "http://before"
    shared.set(KEY, "http://shared")
    own.set(KEY, "http://own")
    # When the earlier one stops first
    shared.restore()
    # Then the later one's functions still reach its moto, and when it stops all is as before
    assert os.environ[KEY] == "http://own"
    own.restore()
    assert os.environ[KEY] == "http://before"


def test_a_key_only_the_earlier_stack_changed_is_restored_when_it_stops() -> None:
    shared, own = EnvironmentPatch(), EnvironmentPatch()
    shared.unset(KEY) if KEY in os.environ else shared.set(KEY, "http://shared")
    own.set("LOCKGATE_TEST_OTHER", "x")
    shared.restore()
    assert KEY not in os.environ and os.environ["LOCKGATE_TEST_OTHER"] == "x"
    own.restore()
    assert "LOCKGATE_TEST_OTHER" not in os.environ
