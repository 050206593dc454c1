"""Admission for each paid model call: input guard, breaker, rate limits, spend caps, fallback.

Order: clamp the output cap to the task's; ask the breaker (an open circuit is not hammered,
not even for a token count); measure the prompt and refuse it when over the task's input limit
(``InputTooLarge``, nothing sent); hold the day's budget and take from the event source's and
the model's rate buckets in one write (``lockgate.capacity.gate``, waiting within the deadline);
call; settle the hold to the real cost and tell the breaker how it went. Every capacity refusal
is a Deferred, so the worker hands the event back to the queue with a delay instead of dropping
it. A half-open breaker's probe claimed by a call that the gate then defers stays claimed until
its lease runs out (the open time): the next probe waits that long.

Fallback: when the primary model's circuit is open, or it still fails with overloaded/5xx after
the client's retries, a task with ``fallback_model`` makes the same call to that model, admitted
through the same steps as that model (its own breaker, bucket and price). The reply records
``fallback_from``. Tasks without one raise, and the event is retried later.

A rate bucket taken for a call that a later step refuses stays taken (the safe direction).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Protocol

from lockgate import tracing
from lockgate.capacity.allowance import Allowance, RunAllowances
from lockgate.capacity.breaker import CircuitBreaker, CircuitOpen
from lockgate.capacity.gate import Gate
from lockgate.capacity.spend import input_tokens_upper_bound
from lockgate.errors import Deferred, PermanentFailure
from lockgate.model.client import ModelClient, ModelError, ModelReply, ModelRequest
from lockgate.model.genai import call_attributes, reply_attributes
from lockgate.model.price_table import PriceTable
from lockgate.model.response_cache import ResponseCache
from lockgate.telemetry import Log, Metrics

# Failures that say the endpoint is unhealthy; 4xx, billing and 429 (the rate limit's business) are not.
ENDPOINT_FAULTS = frozenset({"overloaded_error", "api_error", "timeout", "connection", "timeout_error"})


class TaskLimits(Protocol):
    """What admission reads of a task (``lockgate.agent.tasks.Task`` is one): its name and limits."""

    @property
    def name(self) -> str: ...  # noqa: D102
    @property
    def max_output_tokens(self) -> int: ...  # noqa: D102
    @property
    def max_input_tokens(self) -> int | None: ...  # noqa: D102
    @property
    def fallback_model(self) -> str | None: ...  # noqa: D102


class InputTooLarge(PermanentFailure):
    """The prompt is over the task's input limit: refused before sending; retrying cannot shrink it."""


class Admission:
    """Wraps the model client with the shared controls; each one is optional."""

    def __init__(
        self,
        model: ModelClient,
        prices: PriceTable,
        *,
        metrics: Metrics,
        log: Log,
        breaker: CircuitBreaker | None = None,
        gate: Gate | None = None,
        count_tokens: bool = False,
        responses: ResponseCache | None = None,
    ) -> None:
        self._model = model
        self._prices = prices
        self.breaker = breaker
        self.gate = gate
        self.responses = responses
        self._count_tokens = count_tokens
        self._metrics = metrics
        self._log = log

    def create(
        self,
        task: TaskLimits,
        request: ModelRequest,
        deadline: float,
        source: str,
        *,
        cacheable: bool = False,
        run: RunAllowances | None = None,
        looked_up: bool = False,
    ) -> ModelReply:
        """One admitted call for ``task`` on an event from ``source``; refusals raise before sending.

        ``cacheable`` (a classification-like call of a task not marked fresh) may be answered from
        the response cache: a saved answer costs nothing, so it is served whatever the budget says.
        ``looked_up``: the caller already asked ``saved`` and nothing was saved; the answer still is.
        ``run``: the run's allowances (several calls per admission, settled when the run stops);
        without, the call is admitted and settled on its own.
        """
        request = _clamped(task, request)
        attributes = call_attributes(self._model.provider_name, task.name, request)
        with tracing.span(f"chat {request.model}", kind="client", attributes=attributes):
            reply = self._create(task, request, deadline, source, cacheable, run, looked_up)
            tracing.annotate(reply_attributes(reply, self._prices, request.cache_ttl))
            return reply

    def _create(
        self,
        task: TaskLimits,
        request: ModelRequest,
        deadline: float,
        source: str,
        cacheable: bool,
        run: RunAllowances | None,
        looked_up: bool,
    ) -> ModelReply:
        responses = self.responses if cacheable else None
        saved = responses.get(request) if responses is not None and not looked_up else None
        if saved is not None:
            return saved
        try:
            reply = self._admitted(task, request, deadline, source, run)
        except (CircuitOpen, ModelError) as exc:
            if task.fallback_model is None or task.fallback_model == request.model or not _endpoint_down(exc):
                raise
            self._metrics.add_metric(name="FallbackModelUsed", unit="Count", value=1)
            self._log.warning(
                "model endpoint down: using the fallback",
                extra={"model": request.model, "fallback": task.fallback_model, "why": str(exc)[:200]},
            )
            fallback = replace(request, model=task.fallback_model)
            reply = replace(
                self._admitted(task, fallback, deadline, source, run), fallback_from=request.model
            )
        if responses is not None:
            responses.put(request, reply)
        return reply

    def saved(self, task: TaskLimits, requests: Sequence[ModelRequest]) -> list[ModelReply | None]:
        """The saved answer of each cacheable request (None: not saved), looked up in one read."""
        if self.responses is None:
            return [None] * len(requests)
        return self.responses.get_many([_clamped(task, request) for request in requests])

    def _admitted(
        self, task: TaskLimits, request: ModelRequest, deadline: float, source: str, run: RunAllowances | None
    ) -> ModelReply:
        if self.breaker is not None:
            self.breaker.before_call(request.model)
        # Counted after the breaker: an endpoint that is down is not asked to count either.
        prompt_tokens = self._prompt_tokens(task, request, deadline)
        # The budget hold and both rate buckets (one DynamoDB write for this call or the run's next
        # few: lockgate.capacity.gate and .allowance); a call that fits what the run holds: none.
        alone = run is None
        allowance = (run or RunAllowances(self.gate, task.name, source, calls=1)).for_model(request.model)
        estimate = self._prices.estimate_usd(
            request.model, prompt_tokens, request.max_tokens, cache_ttl=request.cache_ttl
        )
        if allowance is not None:
            allowance.admit(estimate, prompt_tokens + request.max_tokens, deadline)
        try:
            reply = self._model.create(request, deadline)
        except ModelError as exc:
            if self.breaker is not None and _endpoint_fault(exc):
                self.breaker.record_failure(request.model)
            # The API answered with an error: nothing was billed. A timeout or lost connection
            # may have been billed: the estimate stays spent.
            self._spent(allowance, 0.0 if exc.status is not None else estimate, alone=alone)
            raise
        if self.breaker is not None:
            self.breaker.record_success(request.model)
        self._spent(
            allowance, self._prices.cost_usd(reply.model, reply.usage, request.cache_ttl), alone=alone
        )
        return reply

    @staticmethod
    def _spent(allowance: Allowance | None, usd: float, *, alone: bool) -> None:
        if allowance is not None:
            allowance.spent(usd)
            if alone:
                allowance.close()

    def _prompt_tokens(self, task: TaskLimits, request: ModelRequest, deadline: float) -> int:
        """The prompt's size (the API's count when enabled, else a cautious estimate), checked."""
        counted = self._model.count_tokens(request, deadline) if self._count_tokens else None
        tokens = counted or input_tokens_upper_bound(request.system, request.tools, request.messages)
        if task.max_input_tokens is not None and tokens > task.max_input_tokens:
            self._metrics.add_metric(name="InputTooLarge", unit="Count", value=1)
            how = "counted by the API" if counted else "estimated"
            raise InputTooLarge(
                f"prompt of {tokens} input tokens ({how}) is over the task's limit of "
                f"{task.max_input_tokens}; nothing was sent"
            )
        return tokens


def _clamped(task: TaskLimits, request: ModelRequest) -> ModelRequest:
    """The request with its output cap clamped to the task's (part of what a saved answer is keyed on)."""
    return replace(request, max_tokens=min(request.max_tokens, task.max_output_tokens))


def _endpoint_fault(exc: ModelError) -> bool:
    return exc.kind in ENDPOINT_FAULTS or (exc.status or 0) >= 500


def _endpoint_down(exc: Deferred | ModelError) -> bool:
    """The primary cannot serve now: its circuit is open, or it failed overloaded/5xx after retries."""
    return isinstance(exc, CircuitOpen) or (isinstance(exc, ModelError) and _endpoint_fault(exc))
