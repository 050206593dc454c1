"""Tokens billed for one model call, as the Messages API's ``usage`` reports them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Usage:
    """Tokens billed for one call.

    ``cache_creation_5m_input_tokens`` and ``..._1h_...`` split the cache writes by lifetime, as the
    reply's ``usage.cache_creation`` reports them; where they do not add up to
    ``cache_creation_input_tokens`` (a reply without the split, a record from before it), the
    writes are priced at the request's TTL.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_5m_input_tokens: int = 0
    cache_creation_1h_input_tokens: int = 0

    def as_dict(self) -> dict[str, int]:
        """JSON-ready."""
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
            "cache_creation_5m_input_tokens": self.cache_creation_5m_input_tokens,
            "cache_creation_1h_input_tokens": self.cache_creation_1h_input_tokens,
        }

    def __add__(self, other: Usage) -> Usage:
        mine, theirs = self.as_dict(), other.as_dict()
        return Usage(**{key: value + theirs[key] for key, value in mine.items()})


def written(usage: Any, lifetime: str) -> int:
    """Cache-write tokens of one lifetime from the reply's ``usage.cache_creation`` (0 when absent)."""
    return int(getattr(getattr(usage, "cache_creation", None), lifetime, 0) or 0)
