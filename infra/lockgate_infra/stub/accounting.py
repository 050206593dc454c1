"""Token estimates and prompt-cache accounting, the way the Messages API reports them in ``usage``.

Estimate: ``ceil(len(canonical JSON) / 4)`` per prompt block (cache_control markers stripped, so
moving a marker does not change the count). The prompt is the blocks in cache order: each tool
definition, each system text block, then each message content block (tagged with its message
index and role). A request's input tokens are the sum over its blocks.

Cache: every block carrying ``cache_control`` is a breakpoint; the prefix up to it (with the model)
is hashed as it was sent, keys in the order they came (markers stripped), so a prefix that differs
only in key order is a miss, as it is for the API. The longest prefix already written and
unexpired, at a breakpoint or up to 20 blocks before one, is read (``cache_read_input_tokens``) and
its lifetime refreshed; each later breakpoint is written (``cache_creation_input_tokens``: the
tokens from the read up to the last breakpoint written, split by TTL "5m"/"1h"); the rest is
``input_tokens``. Prefixes shorter than the model's minimum cacheable length (the published
table, ``lockgate.model.prompt_cache.min_cacheable_tokens``) are never cached.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
from dataclasses import dataclass
from typing import Any

from lockgate.clock import Clock
from lockgate.model.prompt_cache import min_cacheable_tokens
from lockgate_infra.stub.conversation import JSON, blocks, canonical, messages

TTL_SECONDS = {"5m": 300.0, "1h": 3600.0}
LOOKBACK_BLOCKS = 20


def estimate_tokens(value: object) -> int:
    """Tokens for any JSON value: ceil(len(canonical JSON) / 4)."""
    return math.ceil(len(canonical(value)) / 4)


@dataclass(frozen=True)
class PromptBlock:
    """One unit of the prompt in cache order; ``ttl`` is set when it carries cache_control."""

    item: JSON
    tokens: int
    ttl: str | None


def _block(item: JSON, marked: JSON) -> PromptBlock:
    control = marked.get("cache_control")
    ttl = None
    if isinstance(control, dict):
        ttl = str(control.get("ttl") or "5m")
    return PromptBlock(item=item, tokens=estimate_tokens(item), ttl=ttl)


def _unmarked(value: JSON) -> JSON:
    return {k: v for k, v in value.items() if k != "cache_control"}


def prompt_blocks(request: JSON) -> list[PromptBlock]:
    """Tools, then system, then messages, as cacheable blocks."""
    found: list[PromptBlock] = []
    tools = request.get("tools")
    for tool in tools if isinstance(tools, list) else []:
        if isinstance(tool, dict):
            found.append(_block({"tool": _unmarked(tool)}, tool))
    system = request.get("system")
    system_blocks = [{"type": "text", "text": system}] if isinstance(system, str) else system
    for block in system_blocks if isinstance(system_blocks, list) else []:
        if isinstance(block, dict):
            found.append(_block({"system": _unmarked(block)}, block))
    for index, message in enumerate(messages(request)):
        for block in blocks(message):
            item = {"message": index, "role": message.get("role"), "block": _unmarked(block)}
            found.append(_block(item, block))
    return found


def count_input_tokens(request: JSON) -> int:
    """All input tokens of a request, as count_tokens reports them."""
    return sum(b.tokens for b in prompt_blocks(request))


@dataclass(frozen=True)
class PromptUsage:
    """The input side of ``usage``."""

    input_tokens: int
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    ephemeral_5m_input_tokens: int = 0
    ephemeral_1h_input_tokens: int = 0

    def as_usage(self, output_tokens: int) -> dict[str, Any]:
        """The response's ``usage`` object."""
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": output_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
            "cache_creation": {
                "ephemeral_5m_input_tokens": self.ephemeral_5m_input_tokens,
                "ephemeral_1h_input_tokens": self.ephemeral_1h_input_tokens,
            },
            "service_tier": "standard",
        }


class PromptCache:
    """Remembers written prefixes (by hash) until their TTL runs out; thread-safe."""

    def __init__(self, clock: Clock, min_tokens: int | None = None) -> None:
        self._clock = clock
        self.min_tokens = min_tokens  # None: each model's published minimum
        self._entries: dict[str, tuple[float, float]] = {}  # prefix hash -> (expires_at, ttl seconds)
        self._lock = threading.Lock()

    def account(self, request: JSON) -> PromptUsage:
        """Read what is cached, write what is marked, and say how the input tokens split."""
        prompt = prompt_blocks(request)
        model = str(request.get("model", ""))
        hashes, totals = _prefixes(model, prompt)
        total = totals[-1] if totals else 0
        minimum = self.min_tokens if self.min_tokens is not None else min_cacheable_tokens(model)
        marks = [k for k, b in enumerate(prompt) if b.ttl is not None and totals[k] >= minimum]
        if not marks:
            return PromptUsage(input_tokens=total)
        window = sorted(
            {j for k in marks for j in range(max(0, k - LOOKBACK_BLOCKS + 1), k + 1)}, reverse=True
        )
        with self._lock:
            now = self._clock.now()
            self._entries = {h: e for h, e in self._entries.items() if e[0] > now}
            hit = next((j for j in window if totals[j] >= minimum and hashes[j] in self._entries), -1)
            if hit >= 0:
                _, ttl = self._entries[hashes[hit]]
                self._entries[hashes[hit]] = (now + ttl, ttl)
            read = totals[hit] if hit >= 0 else 0
            written = {"5m": 0, "1h": 0}
            previous = read
            for k in marks:
                if k <= hit:
                    continue
                ttl_name = prompt[k].ttl or "5m"
                seconds = TTL_SECONDS.get(ttl_name, TTL_SECONDS["5m"])
                self._entries[hashes[k]] = (now + seconds, seconds)
                written["1h" if ttl_name == "1h" else "5m"] += totals[k] - previous
                previous = totals[k]
        creation = written["5m"] + written["1h"]
        return PromptUsage(
            input_tokens=total - read - creation,
            cache_creation_input_tokens=creation,
            cache_read_input_tokens=read,
            ephemeral_5m_input_tokens=written["5m"],
            ephemeral_1h_input_tokens=written["1h"],
        )


def _prefixes(model: str, prompt: list[PromptBlock]) -> tuple[list[str], list[int]]:
    """For each block k: the hash of (model, blocks[:k+1]) as sent, and the tokens up to and including it."""
    digest = hashlib.sha256(_as_sent({"model": model}).encode())
    hashes: list[str] = []
    totals: list[int] = []
    running = 0
    for block in prompt:
        digest.update(b"\x1e" + _as_sent(block.item).encode())
        hashes.append(digest.copy().hexdigest())
        running += block.tokens
        totals.append(running)
    return hashes, totals


def _as_sent(value: object) -> str:
    """JSON with keys in the order they arrived: no sorting, so key-order changes are visible."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)
