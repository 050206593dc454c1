"""The deployment's configuration (``lockgate.toml``): the types in ``model``, reading in ``parsing``."""

from lockgate.config.model import (
    DEFAULT_MAX_BODY_BYTES,
    PATTERNS,
    REVIEWER_ID,
    SCHEMES,
    SECRET_PREFIXES,
    SOURCE_NAME,
    ApprovalsConfig,
    BudgetConfig,
    CapacityConfig,
    InboxConfig,
    LockgateConfig,
    RateLimitConfig,
    Reviewer,
    ScheduleConfig,
    SourceConfig,
    ToolApproval,
)
from lockgate.config.parsing import load_config, merge_tables, parse_config, stage_overlay

__all__ = [
    "ApprovalsConfig",
    "BudgetConfig",
    "CapacityConfig",
    "DEFAULT_MAX_BODY_BYTES",
    "InboxConfig",
    "LockgateConfig",
    "PATTERNS",
    "REVIEWER_ID",
    "RateLimitConfig",
    "Reviewer",
    "SCHEMES",
    "SECRET_PREFIXES",
    "SOURCE_NAME",
    "ScheduleConfig",
    "SourceConfig",
    "ToolApproval",
    "load_config",
    "merge_tables",
    "parse_config",
    "stage_overlay",
]
