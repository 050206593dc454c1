"""``[provider]``: who answers the model calls, Anthropic's API, Amazon Bedrock or Claude Platform on AWS.

Stdlib only, like the rest of ``lockgate.config``. What each provider supports is
``lockgate.model.providers``; this module only reads and checks the table. Per deployment in
lockgate.toml, per stage in ``stages/<stage>.toml`` (a stage may switch provider).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lockgate.config.files import no_unknown, table
from lockgate.errors import ConfigError

PROVIDER_NAMES = ("anthropic", "bedrock", "aws")
# The body's version for Claude on Bedrock's InvokeModel (docs.aws.amazon.com/bedrock/latest/
# userguide/model-parameters-anthropic-claude-messages). Sent explicitly: anthropic 2.15.0's
# AnthropicBedrock only fills it in when absent, with its own API version (2026-10-21).
BEDROCK_ANTHROPIC_VERSION = "bedrock-2023-05-31"
AWS_REGION = re.compile(r"^[a-z]{2}(-gov)?-[a-z]+-\d$")
# Claude Platform on AWS: "the tagged workspace ID (wrkspc_…), the same value you pass in the
# anthropic-workspace-id header" (docs.aws.amazon.com/claude-platform/latest/userguide/iam-actions).
WORKSPACE_ID = re.compile(r"^wrkspc_[A-Za-z0-9]{1,64}$")
# What Bedrock's invoke path takes as modelId: a base model id (anthropic.claude-…), a
# cross-Region inference profile id (us./eu./apac./global. + the base id), or an application
# inference profile's ARN (docs.aws.amazon.com/bedrock/latest/userguide/inference-profiles-use).
BEDROCK_MODEL_ID = re.compile(r"^(?:(?P<geo>[a-z]{2,6})\.)?anthropic\.[A-Za-z0-9._:-]{1,150}$")
BEDROCK_PROFILE_ARN = re.compile(
    r"^arn:aws[a-z-]*:bedrock:[a-z0-9-]+:\d{12}:application-inference-profile/[A-Za-z0-9]{1,64}$"
)


@dataclass(frozen=True)
class ProviderConfig:
    """``[provider]``: the model provider and what it needs (region, workspace, Bedrock ids)."""

    name: str = "anthropic"  # "anthropic" (the API, with a key), "bedrock" or "aws" (IAM, no key)
    region: str | None = None  # bedrock/aws: the AWS region to call; None: the function's own
    workspace_id: str | None = None  # aws: the Claude Platform on AWS workspace (wrkspc_…)
    # bedrock: each model id the tasks name → the Bedrock model id or inference profile it calls.
    bedrock_models: Mapping[str, str] = field(default_factory=dict)

    @property
    def uses_api_key(self) -> bool:
        """Whether calls need the model API key (only Anthropic's API: the AWS providers sign with IAM)."""
        return self.name == "anthropic"

    def wire_model_id(self, model: str) -> str:
        """The id sent to the provider for a task's model id (Bedrock's mapped id; else unchanged)."""
        return self.bedrock_models.get(model, model) if self.name == "bedrock" else model

    def wire_params(self, model: str) -> dict[str, object]:
        """SDK parameters that differ by provider for a call to ``model``: its id, Bedrock's version."""
        if self.name != "bedrock":
            return {"model": model}
        return {
            "model": self.wire_model_id(model),
            "extra_body": {"anthropic_version": BEDROCK_ANTHROPIC_VERSION},
        }

    def require_model(self, model: str, where: str) -> None:
        """ConfigError when Bedrock has no id for ``model``: names the setting to add."""
        if self.name == "bedrock" and model not in self.bedrock_models:
            raise ConfigError(
                f'{where} "{model}" has no Bedrock id: add it to lockgate.toml as [provider.bedrock_models] '
                f'"{model}" = "<Bedrock model id or inference profile id>" (docs/providers.md, '
                '"Model ids on Bedrock")'
            )


def parse_provider(body: Mapping[str, Any], origin: str) -> ProviderConfig:
    """``[provider]``: name, region, workspace_id and bedrock_models, checked against each other."""
    where = f"{origin}: [provider]"
    no_unknown(body, {"name", "region", "workspace_id", "bedrock_models"}, where)
    name = body.get("name", "anthropic")
    if name not in PROVIDER_NAMES:
        raise ConfigError(f"{where} name must be one of {', '.join(PROVIDER_NAMES)}, got {name!r}")
    region = body.get("region")
    if region is not None and (not isinstance(region, str) or not AWS_REGION.match(region)):
        raise ConfigError(f"{where} region must be an AWS region such as eu-west-1, got {region!r}")
    workspace = body.get("workspace_id")
    if workspace is not None and (not isinstance(workspace, str) or not WORKSPACE_ID.match(workspace)):
        raise ConfigError(f"{where} workspace_id must look like wrkspc_…, got {workspace!r}")
    models = {
        str(model): _bedrock_id(model, value, f"{where} bedrock_models")
        for model, value in table(body.get("bedrock_models", {}), f"{where} bedrock_models").items()
    }
    if name == "aws" and workspace is None:
        raise ConfigError(
            f'{where}: name = "aws" needs workspace_id, the Claude Platform on AWS workspace (wrkspc_…)'
        )
    if name != "aws" and workspace is not None:
        raise ConfigError(f'{where}: workspace_id is for name = "aws" only; remove it')
    if name == "anthropic" and region is not None:
        raise ConfigError(f'{where}: region is for name = "bedrock" or "aws"; remove it')
    if name == "bedrock" and not models:
        raise ConfigError(
            f'{where}: name = "bedrock" needs [provider.bedrock_models], each model id the tasks use → '
            'its Bedrock model id or inference profile id, e.g. "claude-sonnet-4-5" = '
            '"eu.anthropic.claude-sonnet-4-5-20250929-v1:0"'
        )
    return ProviderConfig(name=name, region=region, workspace_id=workspace, bedrock_models=models)


def _bedrock_id(model: str, value: Any, where: str) -> str:
    if not isinstance(value, str) or not (BEDROCK_MODEL_ID.match(value) or BEDROCK_PROFILE_ARN.match(value)):
        raise ConfigError(
            f'{where} "{model}": {value!r} is not a Bedrock model id (anthropic.…), inference profile '
            "id (us./eu./apac./global.anthropic.…) or application inference profile ARN"
        )
    return value
