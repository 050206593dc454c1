"""One botocore data loader for every session of a process that runs many functions or stacks.

Each function's composition root makes its own boto3 Session, as a Lambda environment does, and a
new session re-reads and re-parses each service's JSON model on its first client (about 40 ms for
DynamoDB, more for a cold disk). In Lambda that happens once per environment; a local stack loads
six functions in one process, and a test run starts hundreds of stacks. The models never change,
so here one loader serves every session; nothing else is shared between them.
"""

from __future__ import annotations

import threading

import botocore.loaders
import botocore.session

_lock = threading.Lock()
_shared: botocore.loaders.Loader | None = None


class _SearchPaths(list[str]):
    """A loader's search paths that ignore a path added twice (every boto3 Session adds its own)."""

    def append(self, path: str) -> None:
        if path not in self:
            super().append(path)


def share_botocore_models() -> None:
    """From now on, every new botocore session of this process uses one loader (idempotent)."""
    global _shared  # noqa: PLW0603 - one loader per process is the point
    with _lock:
        if _shared is not None:
            return
        loader = botocore.loaders.create_loader()
        loader._search_paths = _SearchPaths(loader.search_paths)  # type: ignore[attr-defined]  # noqa: SLF001
        botocore.session.create_loader = lambda *_: loader
        _shared = loader
