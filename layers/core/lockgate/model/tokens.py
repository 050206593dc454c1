"""Tokens billed for one model call, as the Messages API's ``usage`` reports them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Usage:
    """Tokens billed for one call.

    ``cache_creation_5m_input_tokens``: of the cache writes, those the reply's
    ``usage.cache_creation`` says are 5-minute ones; the rest are priced at the request's TTL (on
    a "1h" request, the hour's writes; on a reply without that split, all of them).
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_5m_input_tokens: int = 0

    def as_dict(self) -> dict[str, int]:
        """JSON-ready."""
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
            "cache_creation_5m_input_tokens": self.cache_creation_5m_input_tokens,
        }

    def __add__(self, other: Usage) -> Usage:
        mine, theirs = self.as_dict(), other.as_dict()
        return Usage(**{key: value + theirs[key] for key, value in mine.items()})


def written_for_five_minutes(usage: Any) -> int:
    """The 5-minute cache writes an SDK reply's ``usage.cache_creation`` reports (0 without it)."""
    return int(getattr(getattr(usage, "cache_creation", None), "ephemeral_5m_input_tokens", 0) or 0)
