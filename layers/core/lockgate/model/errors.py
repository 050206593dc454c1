"""Model call failures: one error class, and the SDK's exceptions mapped to it by type and status."""

from __future__ import annotations

from lockgate.errors import LockgateError

RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
FAIL_FAST_STATUS = frozenset({400, 401, 402, 403, 404, 413, 422})

# Bedrock's errors (the AWS REST-JSON protocol) carry no Anthropic ``error.type``: the error's
# name is in the ``x-amzn-ErrorType`` header, as botocore's parser reads it. Each maps to the
# Anthropic type that means the same thing, so admission and the breaker treat Bedrock's
# throttling as the limiter's retryable signal (rate_limit_error, not an endpoint fault) and its
# outages as endpoint faults. Names and statuses: docs.aws.amazon.com/bedrock/latest/userguide/
# troubleshooting-api-error-codes and API_runtime_InvokeModel ("Errors").
BEDROCK_ERROR_TYPES = {
    "ThrottlingException": "rate_limit_error",  # 429: the account's quota for the model
    "ServiceQuotaExceededException": "rate_limit_error",  # 400 on Bedrock, retryable later
    "ModelNotReadyException": "overloaded_error",  # 429: the model is not ready to serve yet
    "ServiceUnavailableException": "overloaded_error",  # 503
    "InternalServerException": "api_error",  # 500
    "ModelTimeoutException": "timeout_error",  # 408
    "ModelErrorException": "api_error",  # 424: the model failed to process the request
    "AccessDeniedException": "permission_error",  # 403: IAM, or model access not enabled
    "ResourceNotFoundException": "not_found_error",  # 404: an unknown model or profile id
    "ValidationException": "invalid_request_error",  # 400
}
RETRYABLE_BEDROCK = frozenset(
    {"ThrottlingException", "ServiceQuotaExceededException", "ModelNotReadyException"}
)


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
        bedrock = _bedrock_error(exc)
        kind = _error_type(exc.body) or BEDROCK_ERROR_TYPES.get(bedrock or "") or f"http_{status}"
        if bedrock in RETRYABLE_BEDROCK:
            return ModelError(
                kind, f"HTTP {status} {bedrock}", retryable=True, request_id=request_id, status=status
            )
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


def _bedrock_error(exc: BaseException) -> str | None:
    """The AWS error name of a Bedrock response ("ThrottlingException:http://..." → its name)."""
    headers = getattr(getattr(exc, "response", None), "headers", None)
    raw = headers.get("x-amzn-errortype") if headers is not None else None
    return raw.split(":", 1)[0] if isinstance(raw, str) and raw else None


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
