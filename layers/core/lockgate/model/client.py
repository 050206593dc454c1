"""The model adapter: the real `anthropic` SDK with our own timeouts, retries and error classes.

The SDK's own retries are off (its defaults, 600 s and 2 retries, outlive any Lambda);
each attempt's timeout and the backoff between attempts are sized to the deadline.

Retries also draw on a ``RetryBudget`` (``lockgate.model.retrybudget``), one per process and
shared by every task the process runs: when retries already add their share of the first
attempts' load, a failure is raised at once (``RetryBudgetExhausted`` metric) and the event is
retried later by the queue, so retries cannot multiply load on a struggling endpoint. Per
process, not shared in DynamoDB: a shared budget would cost a write per attempt, and the fleet's
amplification is still bounded (SQS concurrency x the ratio); the shared circuit breaker is what
stops the whole fleet during an outage.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from lockgate import tracing
from lockgate.clock import Clock
from lockgate.config.provider import ProviderConfig
from lockgate.model.breakpoints import canonical_messages, mark_conversation, marker, unmarked
from lockgate.model.errors import ModelError, classify, retry_after
from lockgate.model.providers import provider as provider_named
from lockgate.model.retrybudget import RetryBudget
from lockgate.model.tokens import Usage, written_for_five_minutes
from lockgate.telemetry import Log, Metrics

SAFETY_SECONDS = 5.0  # leave this much of the deadline for recording the outcome
COUNT_TIMEOUT_SECONDS = 10.0

__all__ = ["ModelClient", "ModelError", "ModelReply", "ModelRequest", "Usage", "classify"]


@dataclass(frozen=True)
class ModelReply:
    """One assistant message."""

    content: list[dict[str, Any]]
    stop_reason: str
    usage: Usage
    model: str
    request_id: str | None = None
    attempts: int = 1
    cache_hit: bool = False  # answered from the response cache: nothing was sent or billed
    batch: bool = False  # answered through Message Batches: billed at the batch discount
    fallback_from: str | None = None  # the task's primary model, when this reply came from its fallback

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready, for the run record."""
        data = {
            "content": self.content,
            "stop_reason": self.stop_reason,
            "usage": self.usage.as_dict(),
            "model": self.model,
            "request_id": self.request_id,
            "attempts": self.attempts,
        }
        if self.cache_hit:
            data["cache_hit"] = True
        if self.batch:
            data["batch"] = True
        if self.fallback_from is not None:
            data["fallback_from"] = self.fallback_from
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelReply:
        """Back from the run record."""
        return cls(
            content=data["content"],
            stop_reason=data["stop_reason"],
            usage=Usage(**data["usage"]),
            model=data["model"],
            request_id=data.get("request_id"),
            attempts=data.get("attempts", 1),
            cache_hit=bool(data.get("cache_hit", False)),
            batch=bool(data.get("batch", False)),
            fallback_from=data.get("fallback_from"),
        )


@dataclass(frozen=True)
class ModelRequest:
    """What the loop asks for; prompt-cache markers are added here, not by callers."""

    model: str
    system: str
    tools: Sequence[dict[str, Any]]
    messages: Sequence[dict[str, Any]]
    max_tokens: int
    cache_ttl: str = "5m"
    # One step of a conversation that goes on (the agent loop): also cache the messages so far,
    # which the next step reads. Off for one-shot calls, where that write would never be read.
    conversation: bool = False
    # A JSON schema the reply must match (structured outputs, lockgate.model.json_outputs); None: free text.
    output_schema: Mapping[str, Any] | None = None

    def to_params(self) -> dict[str, Any]:
        """Messages API parameters in canonical form, with cache breakpoints (see ``breakpoints``)."""
        cached = self.cache_ttl != "off"  # "off" only for measuring what caching saves
        system: dict[str, Any] = {"type": "text", "text": self.system}
        if cached:
            system["cache_control"] = marker(self.cache_ttl)
        messages = canonical_messages(self.messages)
        if cached and self.conversation:
            mark_conversation(messages)
        params: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "system": [system],
            "messages": messages,
        }
        if self.tools:
            params["tools"] = [unmarked(t) for t in self.tools]
        if self.output_schema is not None:
            params["output_config"] = {"format": {"type": "json_schema", "schema": dict(self.output_schema)}}
        return params


class ModelClient:
    """Calls the Messages API within a deadline; classifies every failure."""

    def __init__(
        self,
        client_factory: Callable[[], Any],
        clock: Clock,
        log: Log,
        *,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
        max_attempts: int = 4,
        per_call_timeout: float = 90.0,
        backoff_base: float = 1.0,
        backoff_cap: float = 20.0,
        retry_budget: RetryBudget | None = None,
        metrics: Metrics | None = None,
        provider: ProviderConfig | None = None,
    ) -> None:
        self._factory = client_factory
        # [provider]: only the id on the wire and the count endpoint differ; the rest is the same.
        self._provider = provider or ProviderConfig()
        self._counts_tokens = provider_named(self._provider.name).token_counting
        self._client: Any = None
        # One batch's records call from several threads: the SDK client is made once and shared
        # (it is thread-safe), not once per thread that raced to make it.
        self._client_lock = threading.Lock()
        self._clock = clock
        self._log = log
        self._sleep = sleep
        self.rng = rng or random.Random()  # noqa: S311 - jitter, not security
        self._max_attempts = max_attempts
        self._per_call_timeout = per_call_timeout
        self._base = backoff_base
        self._cap = backoff_cap
        self._budget = retry_budget
        self._metrics = metrics

    @property
    def provider_name(self) -> str:
        """The ``[provider]`` that answers: anthropic, bedrock or aws."""
        return self._provider.name

    @property
    def sdk_factory(self) -> Callable[[], Any]:
        """What makes this client's SDK client (Message Batches calls the same endpoint)."""
        return self._factory

    def refresh(self) -> None:
        """Drop the SDK client (its connections) so the next call makes a new one."""
        self._client = None

    def create(self, request: ModelRequest, deadline: float) -> ModelReply:
        """One assistant reply, retrying what can be retried before ``deadline`` (epoch seconds)."""
        params = request.to_params()
        params.update(self._provider.wire_params(request.model))
        for attempt in range(1, self._max_attempts + 1):
            remaining = deadline - self._clock.now() - SAFETY_SECONDS
            if remaining < 1:
                raise ModelError("deadline", "no time left for a model call", retryable=True)
            if self._budget is not None:
                self._budget.record_attempt(first=attempt == 1)
            try:
                message = (
                    self._sdk()
                    .with_options(timeout=min(self._per_call_timeout, remaining), max_retries=0)
                    .messages.create(**params)
                )
            except Exception as exc:  # noqa: BLE001 - every SDK failure is classified below
                error = classify(exc)
                failure = {"kind": error.kind, "status": error.status, "request_id": error.request_id}
                self._log.warning("model call failed", extra={**failure, "attempt": attempt})
                tracing.event("model attempt failed", {**failure, "attempt": attempt})
                if not error.retryable or attempt == self._max_attempts or not self._may_retry(request):
                    raise error from exc
                delay = self._delay(attempt, exc)
                if self._clock.now() + delay > deadline - SAFETY_SECONDS:
                    raise error from exc
                self._sleep(delay)
                continue
            reply = _reply(message, attempt)
            if params["model"] != request.model:  # Bedrock's id is the invoke path's: record the task's
                reply = replace(reply, model=request.model)
            self._log.info(
                "model call",
                extra={
                    "model": reply.model,
                    "request_id": reply.request_id,
                    **reply.usage.as_dict(),
                    "stop_reason": reply.stop_reason,
                },
            )
            return reply
        raise ModelError("retries", "no attempt succeeded", retryable=True)  # pragma: no cover

    def count_tokens(self, request: ModelRequest, deadline: float) -> int | None:
        """Input tokens as the API's count endpoint reports them; None when it cannot answer in time."""
        remaining = min(COUNT_TIMEOUT_SECONDS, deadline - self._clock.now() - SAFETY_SECONDS)
        if remaining < 1 or not self._counts_tokens:
            return None  # no time, or a provider without the endpoint (Bedrock): the estimate
        params = request.to_params()
        params["model"] = self._provider.wire_model_id(request.model)
        del params["max_tokens"]  # not a count_tokens parameter
        try:
            counted = (
                self._sdk().with_options(timeout=remaining, max_retries=0).messages.count_tokens(**params)
            )
        except Exception as exc:  # noqa: BLE001 - a failed count falls back to the estimate, by design
            error = classify(exc)
            self._log.warning("token count failed", extra={"kind": error.kind, "status": error.status})
            return None
        return int(counted.input_tokens)

    def _may_retry(self, request: ModelRequest) -> bool:
        if self._budget is None or self._budget.allow_retry():
            return True
        if self._metrics is not None:
            self._metrics.add_metric(name="RetryBudgetExhausted", unit="Count", value=1)
        self._log.warning("retry budget spent: not retrying", extra={"model": request.model})
        return False

    def _sdk(self) -> Any:
        with self._client_lock:
            if self._client is None:
                self._client = self._factory()
            return self._client

    def _delay(self, attempt: int, exc: Exception) -> float:
        retry_after_seconds = retry_after(exc)
        if retry_after_seconds is not None:
            return min(retry_after_seconds, 60.0)
        return self.rng.uniform(0, min(self._cap, self._base * 2**attempt))


def reply_from_message(message: Any) -> ModelReply:
    """A ModelReply from an SDK Message (e.g. one returned inside a batch result)."""
    return _reply(message, 1)


def _reply(message: Any, attempts: int) -> ModelReply:
    usage = message.usage
    return ModelReply(
        content=[block.model_dump(exclude_none=True) for block in message.content],
        stop_reason=str(message.stop_reason),
        usage=Usage(
            input_tokens=usage.input_tokens or 0,
            output_tokens=usage.output_tokens or 0,
            cache_creation_input_tokens=getattr(usage, "cache_creation_input_tokens", 0) or 0,
            cache_read_input_tokens=getattr(usage, "cache_read_input_tokens", 0) or 0,
            cache_creation_5m_input_tokens=written_for_five_minutes(usage),
        ),
        model=str(message.model),
        request_id=getattr(message, "_request_id", None),
        attempts=attempts,
    )
