"""``--provider`` for ``lockgate local`` and ``lockgate demo``: the model calls over Amazon Bedrock's or
Claude Platform on AWS's wire format (or Anthropic's API's), answered by the same local stub.

The provider is the config's ``[provider]``, so the worker is built and checked as it deploys with it:
the stack gets that ModelProvider, the worker the SDK's own client, signed with SigV4 from moto's
dummy credentials. For another provider than the config's, the run gets a copy of lockgate.toml
beside it (so ``stages/`` resolves as before) with ``[provider]`` set, filling in only what the
stub needs and the config lacks; the copy is removed when the run ends:

- bedrock: a Bedrock id for each model id Lockgate or ``[models]`` prices (``us.anthropic.<id>-v1:0``:
  the stub runs the Claude model named in it). Calls are priced as they deploy: Bedrock's regional
  price for a ``us.`` profile (docs/providers.md, "Cost"), or the config's ``[models]``.
- aws: a workspace id (``wrkspc_local``) when the config has none.
- anthropic: ``[provider]`` without the AWS providers' region and workspace.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomlkit

from lockgate.config import LockgateConfig, load_config
from lockgate.config.provider import PROVIDER_NAMES
from lockgate.errors import ConfigError
from lockgate.model.price_table import PriceTable
from lockgate.model.providers import provider as provider_named

LOCAL_WORKSPACE = "wrkspc_local"


@dataclass(frozen=True)
class LocalProvider:
    """The config a local run loads, its provider, and what the banner says about it."""

    config_path: Path
    name: str
    note: str = ""  # how the run changed the provider, when it did

    @property
    def description(self) -> str:
        """One line: the provider and, when the run changed it, how."""
        title = provider_named(self.name).title
        return f"{title} ({self.note})" if self.note else title

    @property
    def signs_with_aws(self) -> bool:
        """Whether calls are signed with SigV4 (Bedrock, Claude Platform on AWS), not a key."""
        return self.name != "anthropic"


@contextmanager
def provider_config(config_path: str | Path, provider: str | None) -> Iterator[LocalProvider]:
    """The config with ``provider`` set (None: the config's own) for as long as the run lasts."""
    path = Path(config_path)
    if provider is not None and provider not in PROVIDER_NAMES:
        raise ConfigError(f"--provider must be one of {', '.join(PROVIDER_NAMES)}, not {provider!r}")
    if not path.is_file():  # a template's own stack without a config: Anthropic's API, as the stack does
        yield LocalProvider(path, provider or "anthropic")
        return
    config = load_config(path)
    if provider is None:
        yield LocalProvider(path, config.provider.name)
        return
    document = tomlkit.parse(path.read_text(encoding="utf-8"))
    note = _set_provider(document, config, provider)
    if tomlkit.dumps(document) == path.read_text(encoding="utf-8"):
        yield LocalProvider(path, provider)
        return
    # Beside lockgate.toml, so stages/<stage>.toml still merges over it; one per process.
    copy = path.with_name(f".lockgate-local-{provider}-{os.getpid()}.toml")
    copy.write_text(tomlkit.dumps(document), encoding="utf-8")
    try:
        load_config(copy)  # what the worker will check, refused here in one line
        yield LocalProvider(copy, provider, note)
    finally:
        copy.unlink(missing_ok=True)


def _set_provider(document: Any, config: LockgateConfig, provider: str) -> str:
    """Set ``[provider]`` in ``document`` with what the stub needs; what the banner should add."""
    table = document.setdefault("provider", tomlkit.table())
    table["name"] = provider
    if provider != "aws":
        table.pop("workspace_id", None)  # Claude Platform on AWS only
    if provider == "anthropic":
        table.pop("region", None)  # the AWS providers only
        return ""
    if provider == "aws":
        table.setdefault("workspace_id", LOCAL_WORKSPACE)
        return ""
    ids = table.setdefault("bedrock_models", tomlkit.table())
    for model in PriceTable.from_config(config.models, "anthropic").entries:
        ids.setdefault(model, f"us.anthropic.{model}-v1:0")
    return ""
