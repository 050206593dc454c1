"""The size benchmark splits the worker's lock right: what only ``mcp`` brings, and what stays without it."""

from __future__ import annotations

from benchmarks.mcp_size import LOCK, blocks, without_mcp


def test_the_worker_lock_splits_into_what_only_mcp_needs_and_the_rest() -> None:
    locked = blocks(LOCK.read_text(encoding="utf-8"))
    base = without_mcp(locked)
    # The model SDK and what it needs stay; mcp and what nothing else needs go
    assert {"anthropic", "httpx2", "anyio", "pydantic", "pydantic-core"} <= base
    assert {"mcp", "mcp-types", "uvicorn", "starlette", "cryptography", "jsonschema"}.isdisjoint(base)
    # And every locked distribution is on one side or the other, each with its hashes
    assert base < set(locked) and all(any("--hash=sha256:" in line for line in locked[n]) for n in locked)
