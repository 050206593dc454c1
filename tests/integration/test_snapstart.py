"""SnapStart: two workers restored from one snapshot must not act in step, nor keep stale secrets.

The real worker handler is imported twice (two execution environments), each registering its
after-restore hook with a stand-in for the runtime's ``snapshot_restore_py``. "Restored from one
snapshot" is simulated the way a snapshot makes it: both environments get the same generator state.
"""

from __future__ import annotations

import random
import sys
import types
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from lockgate.inbox.routing import InboxEvent, TaskContext
from lockgate.inbox.store import InboxStore
from lockgate.restore import RestoreHooks, register_after_restore
from tests.integration.test_handlers import function_environment, load
from tests.integration.test_worker import store
from tests.support import Aws, Harness

MODEL_KEY = "lockgate/anthropic-api-key"


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> list[Callable[[], None]]:
    """The runtime's snapshot_restore_py, recording each hook an environment registers."""
    hooks: list[Callable[[], None]] = []
    runtime = types.ModuleType("snapshot_restore_py")
    runtime.register_after_restore = hooks.append  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "snapshot_restore_py", runtime)
    return hooks


@pytest.fixture
def environments(
    aws: Aws, harness: Harness, monkeypatch: pytest.MonkeyPatch, registered: list[Callable[[], None]]
) -> Iterator[tuple[Any, Any]]:
    """Two imports of the real worker handler with the shop's agent task (so a model client exists)."""
    for name, value in {
        **function_environment(aws),
        "ANTHROPIC_API_KEY_REF": f"secretsmanager:{MODEL_KEY}",
    }.items():
        monkeypatch.setenv(name, value)
    aws.client("secretsmanager").create_secret(Name=MODEL_KEY, SecretString="sk-before-snapshot")
    yield load("agent_worker"), load("agent_worker")


def jitter(rng: random.Random) -> list[float]:
    return [rng.uniform(0, 20) for _ in range(4)]


def test_given_two_environments_restored_from_one_snapshot_then_the_hooks_make_their_jitter_differ(
    environments: tuple[Any, Any], registered: list[Callable[[], None]]
) -> None:
    # Given two environments whose generators hold the snapshot's one state
    a, b = environments
    assert len(registered) == 2  # each import registered its hook with the runtime
    snapshot = random.Random(7).getstate()
    for app in (a, b):
        app.worker.rng.setstate(snapshot)
        app.parts.model.rng.setstate(snapshot)
    # (without the hooks, both would back off in step: the hazard the hooks remove)
    assert jitter(a.worker.rng) == jitter(b.worker.rng)
    assert jitter(a.parts.model.rng) == jitter(b.parts.model.rng)
    # When the runtime runs each environment's after-restore hook
    for hook in registered:
        hook()
    # Then the delivery backoff and the model retry jitter differ between them
    assert jitter(a.worker.rng) != jitter(b.worker.rng)
    assert jitter(a.parts.model.rng) != jitter(b.parts.model.rng)
    assert jitter(a.worker.rng) != jitter(a.parts.model.rng)


def test_given_a_restored_environment_then_it_rereads_secrets_instead_of_the_snapshots_copy(
    aws: Aws, environments: tuple[Any, Any], registered: list[Callable[[], None]]
) -> None:
    # Given an environment that read the model key during init (so the snapshot holds it)
    a, _ = environments
    assert a.deps.secrets.resolve(f"secretsmanager:{MODEL_KEY}") == "sk-before-snapshot"
    # And the key was rotated after the snapshot was taken
    aws.client("secretsmanager").put_secret_value(SecretId=MODEL_KEY, SecretString="sk-rotated")
    assert a.deps.secrets.resolve(f"secretsmanager:{MODEL_KEY}") == "sk-before-snapshot"  # still cached
    # When the environment is restored
    registered[0]()
    # Then the next read goes to Secrets Manager and gets the current key
    assert a.deps.secrets.resolve(f"secretsmanager:{MODEL_KEY}") == "sk-rotated"


def test_given_two_restored_workers_then_their_lease_tokens_on_the_inbox_rows_differ(
    harness: Harness, environments: tuple[Any, Any], registered: list[Callable[[], None]]
) -> None:
    # Given two environments restored from one snapshot, each with a delivery to process
    a, b = environments
    snapshot = random.Random(7).getstate()
    for app in (a, b):
        app.worker.rng.setstate(snapshot)
    for hook in registered:
        hook()
    owners: dict[str, str] = {}
    inbox = InboxStore(harness.client("dynamodb"), harness.aws.inbox_table)

    def record_owner(event: InboxEvent, context: TaskContext) -> str:
        # The lease token as stored on the row while this worker holds the delivery.
        owners[event.delivery.pk] = str(inbox.get(event.delivery.pk).lease_owner)
        return "ok"

    first, second = store(harness, 2)
    for app in (a, b):
        app.parts.router.add("github", "push", record_owner)
    # When each worker claims one delivery
    a.worker.process(first, "rh-a", lambda: 30.0)
    b.worker.process(second, "rh-b", lambda: 30.0)
    # Then the two leases carry different, unguessable owner tokens
    assert owners[first] != owners[second]
    assert all(len(token) == 32 for token in owners.values())


def test_given_hooks_then_every_generator_is_reseeded_and_every_refresher_runs_once() -> None:
    # Given generators in one state and two refreshers
    calls: list[str] = []
    first, second = random.Random(1), random.Random(1)
    hooks = RestoreHooks(rngs=[first], refreshers=[lambda: calls.append("clients")])
    hooks.add(rngs=[second], refreshers=[lambda: calls.append("secrets")])
    # When the hook runs
    hooks.after_restore()
    # Then the generators left the shared state and each refresher ran once, in order
    assert jitter(first) != jitter(second)
    assert calls == ["clients", "secrets"]


def test_given_no_runtime_library_then_registration_is_skipped_and_with_one_it_registers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Locally (no snapshot_restore_py) nothing is registered and nothing fails.
    monkeypatch.setitem(sys.modules, "snapshot_restore_py", None)  # makes the import raise ImportError
    assert register_after_restore(lambda: None) is False
    seen: list[Callable[[], None]] = []

    def hook() -> None:
        return None

    assert register_after_restore(hook, registrar=seen.append) is True
    assert seen == [hook]
