"""Development webhook secrets for the embedded stack: fixed, documented, never for production."""

from __future__ import annotations

import base64
from typing import Any

from lockgate.config import LockgateConfig, SourceConfig


def dev_secret(source: SourceConfig) -> str:
    """The local value of a source's secret: predictable, so you can sign requests by hand."""
    raw = f"lockgate-local-{source.name}-secret"
    if source.scheme == "standard":
        return "whsec_" + base64.b64encode(raw.encode()).decode()
    return raw


def seed_dev_secrets(config: LockgateConfig, secretsmanager: Any) -> dict[str, str]:
    """Create every ``secretsmanager:`` secret the config names; return source name → value."""
    values: dict[str, str] = {}
    for source in config.sources.values():
        value = dev_secret(source)
        values[source.name] = value
        for ref in source.secrets:
            kind, _, name = ref.partition(":")
            if kind != "secretsmanager":
                continue
            try:
                secretsmanager.create_secret(Name=name, SecretString=value)
            except secretsmanager.exceptions.ResourceExistsException:
                secretsmanager.put_secret_value(SecretId=name, SecretString=value)
    return values
