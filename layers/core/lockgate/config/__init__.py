"""The deployment's configuration (``lockgate.toml``).

- ``sources``: what the webhook receiver reads, ``[sources]`` and ``[inbox]``, and their parsing;
- ``model``: the other sections and the whole file, as frozen dataclasses;
- ``prices``: ``[models]``, the deployment's own model prices;
- ``provider``: ``[provider]``, who answers model calls (Anthropic's API, Bedrock, Claude Platform on AWS);
- ``parsing``: reading and validating the whole file; ``files``: the TOML and its stage overlay.

Names load on first use, so the receiver (``load_receipt_config``) never builds the others' types.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lockgate.exports import lazy_exports

_SOURCES = "lockgate.config.sources"
_MODEL = "lockgate.config.model"
_PARSING = "lockgate.config.parsing"
_FILES = "lockgate.config.files"
_PROVIDER = "lockgate.config.provider"
# Public name → the module that defines it.
_PUBLIC = {
    "ApprovalsConfig": _MODEL,
    "BudgetConfig": _MODEL,
    "CapacityConfig": _MODEL,
    "DEFAULT_MAX_BODY_BYTES": _SOURCES,
    "InboxConfig": _SOURCES,
    "LockgateConfig": _MODEL,
    "ModelConfig": _MODEL,
    "PATTERNS": _MODEL,
    "PROVIDER_NAMES": _PROVIDER,
    "ProviderConfig": _PROVIDER,
    "REVIEWER_ID": _MODEL,
    "RateLimitConfig": _MODEL,
    "ReceiptConfig": _SOURCES,
    "Reviewer": _MODEL,
    "SCHEMES": _SOURCES,
    "SECRET_PREFIXES": _SOURCES,
    "SOURCE_NAME": _SOURCES,
    "ScheduleConfig": _MODEL,
    "SlackApprovals": _MODEL,
    "SourceConfig": _SOURCES,
    "ToolApproval": _MODEL,
    "WorkflowsConfig": _MODEL,
    "load_config": _PARSING,
    "load_receipt_config": _SOURCES,
    "merge_tables": _FILES,
    "parse_config": _PARSING,
    "stage_overlay": _FILES,
}
__all__ = [
    "ApprovalsConfig",
    "BudgetConfig",
    "CapacityConfig",
    "DEFAULT_MAX_BODY_BYTES",
    "InboxConfig",
    "LockgateConfig",
    "ModelConfig",
    "PATTERNS",
    "PROVIDER_NAMES",
    "ProviderConfig",
    "REVIEWER_ID",
    "RateLimitConfig",
    "ReceiptConfig",
    "Reviewer",
    "SCHEMES",
    "SECRET_PREFIXES",
    "SOURCE_NAME",
    "ScheduleConfig",
    "SlackApprovals",
    "SourceConfig",
    "ToolApproval",
    "WorkflowsConfig",
    "load_config",
    "load_receipt_config",
    "merge_tables",
    "parse_config",
    "stage_overlay",
]

if TYPE_CHECKING:
    from lockgate.config.files import merge_tables, stage_overlay
    from lockgate.config.model import (
        PATTERNS,
        REVIEWER_ID,
        ApprovalsConfig,
        BudgetConfig,
        CapacityConfig,
        LockgateConfig,
        ModelConfig,
        RateLimitConfig,
        Reviewer,
        ScheduleConfig,
        SlackApprovals,
        ToolApproval,
        WorkflowsConfig,
    )
    from lockgate.config.parsing import load_config, parse_config
    from lockgate.config.provider import PROVIDER_NAMES, ProviderConfig
    from lockgate.config.sources import (
        DEFAULT_MAX_BODY_BYTES,
        SCHEMES,
        SECRET_PREFIXES,
        SOURCE_NAME,
        InboxConfig,
        ReceiptConfig,
        SourceConfig,
        load_receipt_config,
    )

__getattr__ = lazy_exports(__name__, _PUBLIC)
