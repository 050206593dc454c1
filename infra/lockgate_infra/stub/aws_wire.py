"""The AWS providers' wire formats, so the real SDK's AnthropicBedrock and AnthropicAWS run offline.

- Amazon Bedrock: ``POST /model/{modelId}/invoke`` with the Messages body minus ``model`` and
  with ``"anthropic_version": "bedrock-2023-05-31"`` in it (docs.aws.amazon.com/bedrock/latest/
  APIReference/API_runtime_InvokeModel; the SDK's ``lib/bedrock/_client.py`` builds exactly
  this). Errors are AWS's: the exception's name in ``x-amzn-ErrorType`` and ``{"message": ...}``.
- Claude Platform on AWS: the Messages API itself, signed, with ``anthropic-workspace-id``
  (docs.aws.amazon.com/claude-platform/latest/userguide/making-requests).

Both sign with SigV4; the stub checks the headers are there (``Authorization:
AWS4-HMAC-SHA256 Credential=…`` and ``X-Amz-Date``), not the signature: it has no secret key.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from lockgate_infra.stub.replies import StubError

BEDROCK_VERSION = "bedrock-2023-05-31"
# A Bedrock base model or inference profile id: [geo.]anthropic.<Anthropic model id>[-vN[:M]].
BEDROCK_ID = re.compile(r"^(?:[a-z]{2,6}\.)?anthropic\.(?P<model>.+?)(?:-v\d+(?::\d+)?)?$")
INVOKE_PATH = re.compile(r"^/model/(?P<model>[^/]+)/(?P<op>invoke|invoke-with-response-stream)$")
# The Anthropic error type a scripted model gives → the exception Bedrock answers with (the
# names of docs.aws.amazon.com/bedrock/latest/userguide/troubleshooting-api-error-codes).
BEDROCK_EXCEPTIONS = {
    "rate_limit_error": "ThrottlingException",
    "overloaded_error": "ServiceUnavailableException",
    "api_error": "InternalServerException",
    "invalid_request_error": "ValidationException",
    "not_found_error": "ResourceNotFoundException",
    "authentication_error": "AccessDeniedException",
    "permission_error": "AccessDeniedException",
    "timeout_error": "ModelTimeoutException",
}


@dataclass(frozen=True)
class Invoke:
    """A Bedrock invoke request: the model id from its path."""

    model: str
    streaming: bool


def bedrock_invoke(path: str) -> Invoke | None:
    """The Bedrock invoke request ``path`` is, or None when it is not one."""
    match = INVOKE_PATH.match(path)
    if match is None:
        return None
    return Invoke(unquote(match["model"]), match["op"] != "invoke")


def sigv4_problem(headers: Any) -> str | None:
    """What is missing from a SigV4-signed request's headers, or None when both are there."""
    authorization = headers.get("authorization") or ""
    if not authorization.startswith("AWS4-HMAC-SHA256 Credential="):
        return "Authorization: a SigV4 signature (AWS4-HMAC-SHA256) is required"
    if not headers.get("x-amz-date"):
        return "X-Amz-Date: the SigV4 signing time is required"
    return None


def signing_scope(headers: Any) -> str:
    """The region and service a SigV4 request was signed for (its credential scope): "us-east-1/bedrock"."""
    credential = str(headers.get("authorization") or "").partition("Credential=")[2].split(",")[0]
    parts = credential.split("/")  # access key / date / region / service / aws4_request
    return "/".join(parts[2:4]) if len(parts) == 5 else ""


def signed(headers: Any) -> bool:
    """Whether the request claims SigV4 (Claude Platform on AWS), not an API key."""
    return str(headers.get("authorization") or "").startswith("AWS4-HMAC-SHA256")


def messages_body(invoke: Invoke, body: Any) -> dict[str, Any] | StubError:
    """The Messages body a Bedrock invoke body stands for (its model from the path), or the 400."""
    if invoke.streaming:
        return StubError(
            400, "invalid_request_error", "streaming is not supported by the Lockgate stub server"
        )
    if not isinstance(body, dict):
        return StubError(400, "invalid_request_error", "The request body is not a JSON object.")
    if body.get("anthropic_version") != BEDROCK_VERSION:
        return StubError(400, "invalid_request_error", f"anthropic_version: must be {BEDROCK_VERSION}")
    if "model" in body:
        return StubError(400, "invalid_request_error", "model: extraneous key (the model is the path's)")
    rest = {key: value for key, value in body.items() if key not in ("anthropic_version", "anthropic_beta")}
    return {"model": anthropic_model(invoke.model), **rest}


def anthropic_model(bedrock_id: str) -> str:
    """The Claude model a Bedrock id runs (``eu.anthropic.claude-sonnet-4-5-20250929-v1:0`` →
    ``claude-sonnet-4-5-20250929``), so the stub validates, caches and answers as that model."""
    match = BEDROCK_ID.match(bedrock_id)
    return match["model"] if match else bedrock_id


def bedrock_error(error: StubError) -> tuple[dict[str, Any], dict[str, str]]:
    """An error as Bedrock answers it: the body and the headers (with ``x-amzn-ErrorType``)."""
    name = BEDROCK_EXCEPTIONS.get(error.type, "InternalServerException")
    return {"message": error.message}, {
        **error.headers,
        "x-amzn-ErrorType": f"{name}:http://internal.amazon.com/",
    }
