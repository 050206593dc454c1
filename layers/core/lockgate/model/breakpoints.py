"""Where prompt-cache breakpoints go, and the canonical request they mark.

The API caches the prompt (tools → system → messages) up to each block carrying
``cache_control``, at most four per request; a later request reads the longest prefix it finds
byte-for-byte, looking back at most 20 blocks from each of its breakpoints. Lockgate marks:

1. the system prompt, with the task's TTL: tools + system, the prefix every run shares;
2. in a conversation (the agent loop), the newest message's last block, 5 minutes: each step
   reads everything the previous step sent and writes only what was added since. Five minutes
   because a conversation is re-read only within its run, seconds later. It always comes after
   the system marker, so a "1h" marker still precedes every "5m" one, as the API requires;
3. the previous step's newest block, only when the latest step added 20 blocks or more (many
   parallel tool calls): the lookback from the newest breakpoint would not reach that entry.

``Usage`` keeps one cache-write total, so a "1h" task's 5-minute conversation writes are priced
at the 1h rate in its totals and spend caps: an over-count, never an under-count.

No marker on the last tool: the tools always come right before an unchanged system prompt, so
the system breakpoint's prefix covers them; a tool marker pays only when the system prompt
changes while the tools do not (``benchmarks/prompt_caching`` measures it: no difference).

Canonical form, so that an identical prefix is byte-identical across steps, retries and runs:
message content always a list of blocks, every block's keys sorted (recursively), markers only
where placed here. Tool definitions keep their own key order: a schema's property order is part
of what the model reads, and the schemas come from code, not from data.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

LOOKBACK_BLOCKS = 20  # how far back the API looks from a breakpoint for an earlier cache entry
MAX_BREAKPOINTS = 4
CONVERSATION_TTL = "5m"
_UNMARKABLE = frozenset({"thinking", "redacted_thinking"})  # blocks cache_control cannot go on


def marker(ttl: str) -> dict[str, str]:
    """The cache_control value for a TTL ("5m" is the API's default and is left implicit)."""
    return {"type": "ephemeral", "ttl": "1h"} if ttl == "1h" else {"type": "ephemeral"}


def sorted_keys(value: Any) -> Any:
    """The value with every object's keys in sorted order (lists keep theirs)."""
    if isinstance(value, dict):
        return {str(k): sorted_keys(value[k]) for k in sorted(value, key=str)}
    if isinstance(value, list | tuple):
        return [sorted_keys(v) for v in value]
    return value


def unmarked(block: dict[str, Any]) -> dict[str, Any]:
    """A copy of a block (or tool definition) without cache_control."""
    return {k: v for k, v in block.items() if k != "cache_control"}


def canonical_messages(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages in canonical form: content as a list of key-sorted blocks, no markers."""
    found = []
    for message in messages:
        content = message.get("content")
        items = [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])
        found.append({"role": message["role"], "content": [sorted_keys(unmarked(block)) for block in items]})
    return found


def mark_conversation(messages: list[dict[str, Any]]) -> None:
    """Put the rolling breakpoint (and, after a long step, the previous one) on canonical messages."""
    if not messages:
        return
    _mark_last(messages[-1])
    previous_step = (
        len(messages) >= 3 and messages[-1]["role"] == "user" and messages[-2]["role"] == "assistant"
    )
    if previous_step and sum(len(m["content"]) for m in messages[-2:]) >= LOOKBACK_BLOCKS:
        _mark_last(messages[-3])


def _mark_last(message: dict[str, Any]) -> None:
    for block in reversed(message["content"]):
        if block.get("type") not in _UNMARKABLE:
            block["cache_control"] = marker(CONVERSATION_TTL)
            return
