"""The AWS credentials an eval signs an AWS provider's model calls with (Bedrock, Claude Platform on AWS).

The eval's trials run under moto, which puts fake credentials in the environment: a client that
took the default chain inside it would sign with those. So the credentials are read before, and
given to the SDK client outright (``lockgate.model.sdk.AwsKeys``). The weekly eval job passes its
role's to its child process under names of their own, which nothing but the model client reads:
the child's sandbox still sees only fake ``AWS_*`` credentials (``lockgate_infra.evals.job``).
"""

from __future__ import annotations

from collections.abc import Mapping

from lockgate.errors import ConfigError
from lockgate.model.sdk import AwsKeys

# What the child reads, in AwsKeys' order: access key, secret key, session token, region.
VARIABLES = (
    "LOCKGATE_EVAL_AWS_ACCESS_KEY_ID",
    "LOCKGATE_EVAL_AWS_SECRET_ACCESS_KEY",
    "LOCKGATE_EVAL_AWS_SESSION_TOKEN",
    "LOCKGATE_EVAL_AWS_REGION",
)


def as_environment(keys: AwsKeys) -> dict[str, str]:
    """``keys`` as the child's variables (a missing token or region is left out)."""
    values = (keys.access_key, keys.secret_key, keys.session_token, keys.region)
    return {name: value for name, value in zip(VARIABLES, values, strict=True) if value}


def signing_keys(environ: Mapping[str, str]) -> AwsKeys:
    """The keys the job passed (``VARIABLES``), else this process's default chain, read now."""
    if environ.get(VARIABLES[0]):
        access, secret, token, region = (environ.get(name) or None for name in VARIABLES)
        return AwsKeys(access or "", secret or "", token, region)
    return default_keys()


def default_keys() -> AwsKeys:
    """The default AWS chain's credentials and region (a function's role; your profile)."""
    import boto3

    session = boto3.session.Session()
    credentials = session.get_credentials()
    if credentials is None:
        raise ConfigError(
            "no AWS credentials for the model provider's signed calls: run `aws configure` "
            "(or `aws sso login`), or set AWS_PROFILE"
        )
    frozen = credentials.get_frozen_credentials()
    return AwsKeys(frozen.access_key or "", frozen.secret_key or "", frozen.token, session.region_name)
