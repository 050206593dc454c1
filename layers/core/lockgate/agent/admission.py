"""Admission for each paid model call: spend caps and the circuit breaker, shared by every Lambda.

Order: reserve the day's budget (a capped call is never sent), ask the breaker (an open circuit
is not hammered), call, then settle the reservation to the real cost and tell the breaker how it
went. Every refusal is a Deferred, so the worker hands the event back instead of dropping it.
"""

from __future__ import annotations

from lockgate.agent.breaker import CircuitBreaker
from lockgate.agent.model import ModelClient, ModelError, ModelReply, ModelRequest
from lockgate.agent.pricing import cost_usd
from lockgate.agent.spend import Reservation, SpendCaps, estimate_usd, input_tokens_upper_bound
from lockgate.errors import Deferred

# Failures that say the endpoint is unhealthy; 4xx, billing and 429 (the rate limit's business) are not.
ENDPOINT_FAULTS = frozenset({"overloaded_error", "api_error", "timeout", "connection", "timeout_error"})


class AdmittedCalls:
    """Wraps the model client with the shared controls; each one is optional."""

    def __init__(
        self, model: ModelClient, *, spend: SpendCaps | None = None, breaker: CircuitBreaker | None = None
    ) -> None:
        self._model = model
        self.spend = spend
        self.breaker = breaker

    def create(self, task_name: str, request: ModelRequest, deadline: float, cache_ttl: str) -> ModelReply:
        """One admitted call; raises Deferred (cap reached, circuit open) before anything is sent."""
        reservation = self._reserve(task_name, request, cache_ttl)
        try:
            if self.breaker is not None:
                self.breaker.before_call(request.model)
            reply = self._model.create(request, deadline)
        except ModelError as exc:
            if self.breaker is not None and (exc.kind in ENDPOINT_FAULTS or (exc.status or 0) >= 500):
                self.breaker.record_failure(request.model)
            if exc.status is not None:  # the API answered with an error: nothing was billed
                self._settle(reservation, 0.0)
            raise  # a timeout or lost connection keeps the hold: it may have been billed
        except Deferred:
            self._settle(reservation, 0.0)  # refused before sending
            raise
        if self.breaker is not None:
            self.breaker.record_success(request.model)
        self._settle(reservation, cost_usd(reply.model, reply.usage, cache_ttl))
        return reply

    def _reserve(self, task_name: str, request: ModelRequest, cache_ttl: str) -> Reservation | None:
        if self.spend is None:
            return None
        prompt = input_tokens_upper_bound(request.system, request.tools, request.messages)
        return self.spend.reserve(
            task_name, estimate_usd(request.model, prompt, request.max_tokens, cache_ttl=cache_ttl)
        )

    def _settle(self, reservation: Reservation | None, actual_usd: float) -> None:
        if reservation is not None and self.spend is not None:
            self.spend.settle(reservation, actual_usd)
