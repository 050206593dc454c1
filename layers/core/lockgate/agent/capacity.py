"""Capacity controls in front of a model call, one module each (re-exported here).

- ``ratelimit``: shared requests/tokens-per-minute buckets per model and per source (GCRA).
- ``breaker``: a circuit breaker per model endpoint.
- ``retrybudget``: retries capped at a share of first attempts.

``gate`` writes a call's budget holds and bucket takes together; ``admission`` puts them all
in front of each model call.
"""

from __future__ import annotations

from lockgate.agent.breaker import CircuitBreaker, CircuitOpen
from lockgate.agent.ratelimit import Bucket, RateLimited, RateLimiter
from lockgate.agent.retrybudget import RetryBudget

__all__ = ["Bucket", "CircuitBreaker", "CircuitOpen", "RateLimited", "RateLimiter", "RetryBudget"]
