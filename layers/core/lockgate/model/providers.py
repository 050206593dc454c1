"""What each model provider supports, in one map that the code follows and docs/providers.md shows.

The SDK ships a client for each (``anthropic.Anthropic``, ``AnthropicBedrock``, ``AnthropicAWS``);
``lockgate.model.sdk`` builds the one ``[provider]`` names. Facts, with where they come from:

- Bedrock: the SDK's ``AnthropicBedrock`` refuses ``/v1/messages/batches`` ("The Batch API is not
  supported in Bedrock yet") and ``/v1/messages/count_tokens`` (anthropic 2.15.0,
  ``lib/bedrock/_client.py``); it signs with SigV4 for the service ``bedrock`` and sends the
  Messages body to ``/model/{modelId}/invoke`` with ``anthropic_version`` in the body
  (docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_InvokeModel). Prompt caching and
  structured outputs are in the Messages body Bedrock passes on.
- Claude Platform on AWS: "the same API surface as the Claude first-party platform", with SigV4
  for the service ``aws-external-anthropic`` and an ``anthropic-workspace-id`` header
  (docs.aws.amazon.com/claude-platform/latest/userguide/making-requests); Message Batches and
  token counting are its actions CreateBatchInference / GetBatchInference and CountTokens
  (.../userguide/iam-actions).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Provider:
    """One model provider: how Lockgate reaches it and which API features it has there."""

    name: str  # the [provider] name in lockgate.toml
    title: str  # what the docs call it
    auth: str  # how calls are authorised
    prompt_caching: bool
    message_batches: bool  # Message Batches (half price); without: batched tasks call directly
    structured_outputs: bool
    token_counting: bool  # the count_tokens endpoint ([capacity] count_tokens)
    regions: str  # where it runs, for the docs table
    # IAM actions the worker's role needs on the provider's resources (none: an API key instead).
    iam_actions: tuple[str, ...] = ()
    batch_iam_actions: tuple[str, ...] = ()  # ...and the batch collector's, where batches exist


PROVIDERS: dict[str, Provider] = {
    "anthropic": Provider(
        name="anthropic",
        title="Anthropic API",
        auth="API key (Secrets Manager)",
        prompt_caching=True,
        message_batches=True,
        structured_outputs=True,
        token_counting=True,
        regions="Anthropic's (outside your AWS account)",
    ),
    "bedrock": Provider(
        name="bedrock",
        title="Amazon Bedrock",
        auth="IAM role (SigV4, service bedrock)",
        prompt_caching=True,
        message_batches=False,
        structured_outputs=True,
        token_counting=False,
        regions="the Bedrock regions with Claude model access; cross-Region inference profiles",
        # Only InvokeModel: Lockgate does not stream (InvokeModelWithResponseStream) and does not
        # use Bedrock batch inference jobs, which need S3 files, a service role and a per-model
        # minimum of records (a Service Quotas value: docs/providers.md, "Batches").
        iam_actions=("bedrock:InvokeModel",),
    ),
    "aws": Provider(
        name="aws",
        title="Claude Platform on AWS",
        auth="IAM role (SigV4, service aws-external-anthropic) and a workspace id",
        prompt_caching=True,
        message_batches=True,
        structured_outputs=True,
        token_counting=True,
        regions="the regions of Claude Platform on AWS; a workspace is bound to one",
        iam_actions=("aws-external-anthropic:CreateInference", "aws-external-anthropic:CountTokens"),
        batch_iam_actions=(
            "aws-external-anthropic:CreateBatchInference",
            "aws-external-anthropic:GetBatchInference",
        ),
    ),
}


def provider(name: str) -> Provider:
    """The provider called ``name`` (one of ``lockgate.config.PROVIDER_NAMES``)."""
    return PROVIDERS[name]
