"""SnapStart: what an execution environment restored from a snapshot must redo before it works.

Every environment resumed from one snapshot starts with the same memory: the same
``random.Random`` states (so the same backoff jitter, in step, across every copy), SDK
clients holding connections opened before the snapshot, and secrets cached at init.
The hooks reseed from the kernel, drop the clients and forget the secrets.

Lease and ledger owner tokens come from ``uuid.uuid4`` (``os.urandom``), which reads the
kernel on every call and needs no reseeding.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

_SEED_BYTES = 32


def reseed(rng: random.Random) -> None:
    """Give ``rng`` fresh kernel entropy, so copies of one snapshot diverge."""
    rng.seed(os.urandom(_SEED_BYTES))


@dataclass
class RestoreHooks:
    """The random generators to reseed and the refresh callables to run after a restore."""

    rngs: list[random.Random] = field(default_factory=list)
    refreshers: list[Callable[[], None]] = field(default_factory=list)

    def add(
        self, *, rngs: Iterable[random.Random] = (), refreshers: Iterable[Callable[[], None]] = ()
    ) -> None:
        """Register more generators and refreshers."""
        self.rngs.extend(rngs)
        self.refreshers.extend(refreshers)

    def after_restore(self) -> None:
        """Reseed every generator (and the ``random`` module's), then refresh clients and secrets."""
        # Libraries that call random.* directly share the module's generator.
        random.seed(os.urandom(_SEED_BYTES))
        for rng in self.rngs:
            reseed(rng)
        for refresh in self.refreshers:
            refresh()


def register_after_restore(hook: Callable[[], None], registrar: Callable[..., object] | None = None) -> bool:
    """Register ``hook`` with the runtime; False where ``snapshot_restore_py`` is absent (locally).

    The python3.12+ managed runtimes ship ``snapshot_restore_py``; it is not on PyPI's
    dependency path here, and the hook only matters in a restored environment.
    """
    if registrar is None:
        try:
            import snapshot_restore_py
        except ImportError:
            return False
        registrar = snapshot_restore_py.register_after_restore
    registrar(hook)
    return True
