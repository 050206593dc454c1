"""What a scripted model answers: a reply (content + stop reason) or an API error, and ready-made errors."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

LOG = logging.getLogger("lockgate.stub")

STOP_REASONS = frozenset(
    {
        "end_turn",
        "max_tokens",
        "stop_sequence",
        "tool_use",
        "pause_turn",
        "refusal",
        "model_context_window_exceeded",
    }
)


@dataclass(frozen=True)
class Reply:
    """One assistant message: Messages API content blocks and the stop reason."""

    content: list[dict[str, Any]]
    """The message's content blocks: ``{"type": "text", ...}`` and ``{"type": "tool_use", ...}``."""

    stop_reason: str = "end_turn"
    """Why the turn ended: ``tool_use`` (it calls tools), ``end_turn`` (its last words), ..."""


@dataclass(frozen=True)
class StubError:
    """An API error answer: HTTP status, ``error.type``, message, extra headers, and a delay before it."""

    status: int
    type: str
    message: str
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds the server waits before answering (longer than the client timeout → timeout)


# A scripted model: the request JSON in, a reply or an error out.
Model = Callable[[dict[str, Any]], Reply | StubError]


def rate_limited(retry_after: float | None = 2) -> StubError:
    """429 rate_limit_error, with ``retry-after`` seconds when given."""
    headers = {} if retry_after is None else {"retry-after": f"{retry_after:g}"}
    return StubError(
        429, "rate_limit_error", "This request would exceed your organization's rate limit (stub).", headers
    )


def overloaded() -> StubError:
    """529 overloaded_error."""
    return StubError(529, "overloaded_error", "Overloaded")


def server_error() -> StubError:
    """500 api_error."""
    return StubError(500, "api_error", "Internal server error")


def bad_request(message: str = "Invalid request (stub).") -> StubError:
    """400 invalid_request_error."""
    return StubError(400, "invalid_request_error", message)


def billing() -> StubError:
    """402 billing_error (the SDK raises PaymentRequiredError)."""
    return StubError(402, "billing_error", "Your credit balance is too low to access the Anthropic API.")


def authentication() -> StubError:
    """401 authentication_error."""
    return StubError(401, "authentication_error", "invalid x-api-key")


def permission() -> StubError:
    """403 permission_error."""
    return StubError(
        403, "permission_error", "Your API key does not have permission to use the specified resource."
    )


def not_found() -> StubError:
    """404 not_found_error."""
    return StubError(404, "not_found_error", "The requested resource could not be found.")


def too_large() -> StubError:
    """413 request_too_large."""
    return StubError(413, "request_too_large", "Request exceeds the maximum allowed number of bytes.")


def timeout(delay: float = 2.0) -> StubError:
    """Silence for ``delay`` seconds, then a 504; a client with a shorter timeout gives up first."""
    return StubError(504, "timeout_error", "Request timed out (stub).", delay=delay)


@dataclass(frozen=True)
class NotWrittenFor(Reply):
    """An offline model's answer to a task it was not written for (``FirstWrittenFor`` asks the next)."""


def not_written_for(model: str, written_for: str, offered: list[str]) -> Reply:
    """The answer of an offline model asked to run a task it was not written for: say so, plainly.

    Answering with another task's reply would look like success; this reply is the run's outcome
    (so ``lockgate runs show`` says it), and the stand-in server logs a warning when it answers
    with it (not when ``FirstWrittenFor`` asks another model instead).
    """
    note = (
        f"The {model} was written for {written_for}, not for this task "
        f"(it offers {', '.join(offered) or 'no tools'}); nothing was done. Script a model for this task "
        "and run it with --model package.module:factory (see Testing your workflow)."
    )
    return NotWrittenFor([{"type": "text", "text": note}], "end_turn")


class FirstWrittenFor:
    """Several offline models as one: each request goes to the first that was written for its task.

    ``lockgate local --model demo --model triage.model:scripted_model`` answers the shop's tasks
    with the demo model and triage's with its script. When none was written for a request, the
    last one's "not written for" answer stands.
    """

    def __init__(self, models: list[Model]) -> None:
        if not models:
            raise ValueError("FirstWrittenFor needs at least one model")
        self.models = models

    def __call__(self, request: dict[str, Any]) -> Reply | StubError:
        answer: Reply | StubError | None = None
        for model in self.models:
            answer = model(request)
            if not isinstance(answer, NotWrittenFor):
                return answer
        assert answer is not None
        return answer


class Switchable:
    """A model that may be swapped for another between requests (``TestStack.model = other``)."""

    def __init__(self, model: Model) -> None:
        self.model = model

    def __call__(self, request: dict[str, Any]) -> Reply | StubError:
        return self.model(request)
