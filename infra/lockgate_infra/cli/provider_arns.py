"""``lockgate provider-arns``: the exact ARNs a Bedrock deployment's worker may invoke, from lockgate.toml.

The template cannot turn ``[provider.bedrock_models]`` into ARNs (CloudFormation has no loop over
a list), so its ``BedrockModelArns`` parameter takes them whole and this prints them:

- a base model id (``anthropic.…``): its foundation-model ARN in the provider's region;
- a cross-Region inference profile id (``eu.anthropic.…``): the profile's ARN, and the base
  model's foundation-model ARN in any region (``*``), as the profile routes each request to one
  of its Regions and IAM checks both (docs.aws.amazon.com/bedrock/latest/userguide/
  inference-profiles-prereq writes the model as ``arn:aws:bedrock:*::foundation-model/…``);
- an application inference profile ARN: itself (add the models it routes to by hand).
"""

from __future__ import annotations

from lockgate.config import ProviderConfig
from lockgate.config.provider import BEDROCK_MODEL_ID
from lockgate.errors import ConfigError


def bedrock_arns(provider: ProviderConfig, account: str, region: str, partition: str = "aws") -> list[str]:
    """The foundation-model and inference-profile ARNs of ``provider``'s Bedrock ids, in order, once each."""
    if provider.name != "bedrock":
        raise ConfigError(f'[provider] name is "{provider.name}": only bedrock needs BedrockModelArns')
    if not (account.isdigit() and len(account) == 12):
        raise ConfigError(f"--account must be a 12-digit AWS account id, got {account!r}")
    where = provider.region or region
    arns: list[str] = []
    for bedrock_id in provider.bedrock_models.values():
        match = BEDROCK_MODEL_ID.match(bedrock_id)
        if match is None:  # an application inference profile's ARN
            found = [bedrock_id]
        elif match["geo"] is None:
            found = [f"arn:{partition}:bedrock:{where}::foundation-model/{bedrock_id}"]
        else:
            base = bedrock_id.removeprefix(f"{match['geo']}.")
            found = [
                f"arn:{partition}:bedrock:{where}:{account}:inference-profile/{bedrock_id}",
                f"arn:{partition}:bedrock:*::foundation-model/{base}",
            ]
        arns.extend(arn for arn in found if arn not in arns)
    return arns
