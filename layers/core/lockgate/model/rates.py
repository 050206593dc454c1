"""One model's per-million-token prices on one endpoint, USD: the shape every price table uses."""

from __future__ import annotations

from dataclasses import dataclass

CACHE_WRITE_5M = 1.25  # × the input price, where a source gives no cache-write price of its own
CACHE_WRITE_1H = 2.0


@dataclass(frozen=True)
class Price:
    """Per-million-token prices for one model.

    ``cache_write_5m`` and ``cache_write_1h`` are the prompt-cache write prices; None: the input
    price × Anthropic's multipliers (1.25 and 2). ``long_prompt`` is a second set of rates for
    requests whose prompt (input + cache reads + cache writes) is over ``long_prompt_over`` tokens;
    it then applies to every token of the request, output included.
    """

    input: float
    output: float
    cache_read: float
    long_prompt_over: int | None = None
    long_prompt: Price | None = None
    cache_write_5m: float | None = None
    cache_write_1h: float | None = None

    def rates_for(self, prompt_tokens: int) -> Price:
        """The rates that apply to a request with this many prompt tokens."""
        over = self.long_prompt_over
        if self.long_prompt is not None and over is not None and prompt_tokens > over:
            return self.long_prompt
        return self

    def cache_write(self, ttl: str) -> float:
        """The price of writing the prompt cache with this TTL ("1h", else the 5-minute price)."""
        if ttl == "1h":
            return self.input * CACHE_WRITE_1H if self.cache_write_1h is None else self.cache_write_1h
        return self.input * CACHE_WRITE_5M if self.cache_write_5m is None else self.cache_write_5m
