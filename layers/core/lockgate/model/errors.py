"""Model call failures: one error class, and the SDK's exceptions mapped to it by type and status."""

from __future__ import annotations

from lockgate.errors import LockgateError

RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
FAIL_FAST_STATUS = frozenset({400, 401, 402, 403, 404, 413, 422})


class ModelError(LockgateError):
    """A model call failed; ``retryable`` says whether trying later can help."""

    def __init__(
        self,
        kind: str,
        message: str,
        *,
        retryable: bool,
        request_id: str | None = None,
        status: int | None = None,
    ) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.retryable = retryable
        self.request_id = request_id
        self.status = status


def classify(exc: BaseException) -> ModelError:
    """Map an SDK exception to a ModelError (by type and status, never by message text)."""
    import anthropic  # the worker has it; the receiver never reaches this module

    request_id = getattr(exc, "request_id", None)
    if isinstance(exc, anthropic.APITimeoutError):
        return ModelError("timeout", "the model call timed out", retryable=True, request_id=request_id)
    if isinstance(exc, anthropic.APIConnectionError):
        return ModelError("connection", "could not reach the API", retryable=True, request_id=request_id)
    if isinstance(exc, anthropic.APIStatusError):
        status = exc.status_code
        kind = _error_type(exc.body) or f"http_{status}"
        if kind == "billing_error" or status == 402:
            return ModelError(
                "billing",
                "billing or credit problem: check the account",
                retryable=False,
                request_id=request_id,
                status=status,
            )
        if status in RETRYABLE_STATUS:
            return ModelError(kind, f"HTTP {status}", retryable=True, request_id=request_id, status=status)
        return ModelError(
            kind,
            f"HTTP {status}",
            retryable=status not in FAIL_FAST_STATUS and status >= 500,
            request_id=request_id,
            status=status,
        )
    return ModelError("unexpected", type(exc).__name__, retryable=False)


def _error_type(body: object) -> str | None:
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and isinstance(error.get("type"), str):
            return str(error["type"])
    return None


def retry_after(exc: Exception) -> float | None:
    """Seconds from the response's ``retry-after`` header, when it has one."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    raw = headers.get("retry-after")
    try:
        return max(0.0, float(raw)) if raw is not None else None
    except ValueError:
        return None
