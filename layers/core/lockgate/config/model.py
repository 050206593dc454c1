"""What ``lockgate.toml`` says, as frozen dataclasses: approvals, budget, capacity, schedules, model
prices, and the whole file; sources and inbox (what the receiver reads) are in ``lockgate.config.sources``.
Parsing and validation are in ``lockgate.config.parsing``."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lockgate.config.mcp import McpServerConfig
from lockgate.config.provider import ProviderConfig
from lockgate.config.rules import Requirement, ThresholdRule, threshold_rules
from lockgate.config.sources import ReceiptConfig

PATTERNS = ("queue", "veto", "draft")
REVIEWER_ID = re.compile(r"^[A-Za-z0-9._@-]{1,64}$")


@dataclass(frozen=True)
class Reviewer:
    """A person who may approve actions, and how to reach them."""

    id: str  # what the reviewer is called in links, decisions and the audit (letters, digits, ._@-)
    name: str  # shown on pages and in messages
    roles: tuple[str, ...]  # matched against a tool's roles: who may decide what
    email: str | None = None  # where their links and the daily digest go
    slack_user: str | None = None  # their Slack user id (U0123...): a click in Slack decides as them


@dataclass(frozen=True)
class ToolApproval:
    """Who decides a tool's proposals, how many must agree, the rules that ask for more, the time limits."""

    roles: tuple[str, ...] = ()  # reviewers with any of these roles may decide (none: any reviewer)
    reviewers_required: int = 1  # distinct people who must approve (2: two-person rule)
    decide_within_hours: int = 24  # a proposal not decided by then expires
    run_within_hours: int = 1  # an approved proposal not run by then is not run
    # "queue": waits for approval (default). "veto": runs after veto_minutes unless someone
    # rejects (only for tools marked reversible). "draft": the assistant prepares, a person sends.
    pattern: str = "queue"
    veto_minutes: int = 30  # the "veto" pattern's window
    # [[approvals.tools.NAME.rules]]: thresholds on a number argument that ask for more reviewers,
    # narrower roles, or refuse the call (lockgate.config.rules), in the order written.
    rules: tuple[ThresholdRule, ...] = ()
    # Nobody decided within this many minutes: the reviewers with escalate_roles are sent their own
    # links too, and may decide from then on (the escalate-approvals job). None: no escalation.
    escalate_after_minutes: int | None = None
    escalate_roles: tuple[str, ...] = ()  # the second group escalation adds (with escalate_after_minutes)

    def requirement(self, args: Mapping[str, Any], *, high_stakes: bool = False) -> Requirement:
        """What a call with these canonical arguments needs under this section and its rules."""
        base = Requirement(max(self.reviewers_required, 2 if high_stakes else 1), self.roles)
        return base.with_rules(threshold_rules(self.rules, args))


@dataclass(frozen=True)
class SlackApprovals:
    """``[approvals.slack]``: a Slack app posts each proposal with Approve / Reject (and Edit) buttons."""

    channel: str  # the channel id (C0123...) the messages go to
    bot_token: str  # secret reference: the bot token (chat:write, channels:history), the notifier's only
    signing_secret: str  # secret reference: the app's signing secret, read by the approval callback only
    team_id: str  # the workspace (T0123...) whose clicks may decide: a click from any other is refused
    tolerance_seconds: int = 300  # how old a signed click may be (Slack's own advice: five minutes)
    enterprise_id: str | None = None  # Enterprise Grid (E0123...): a click must come from this org too


@dataclass(frozen=True)
class ApprovalsConfig:
    """Reviewers and per-tool approval rules."""

    reviewers: tuple[Reviewer, ...] = ()
    tools: Mapping[str, ToolApproval] = field(default_factory=dict)
    max_pending_per_task: int = 20  # proposals waiting for a person, per task
    max_pending_per_sender: int = 3  # ... per sender within a task (RunFacts.sender), e.g. one email address
    default: ToolApproval = field(default_factory=ToolApproval)
    slack: SlackApprovals | None = None

    def slack_reviewer(self, slack_user: str) -> Reviewer | None:
        """The reviewer this Slack user id is mapped to, or None."""
        return next((r for r in self.reviewers if r.slack_user and r.slack_user == slack_user), None)

    def for_tool(self, tool: str) -> ToolApproval:
        """The rule for a tool, or the default."""
        return self.tools.get(tool, self.default)

    def reviewers_for(self, tool: str) -> tuple[Reviewer, ...]:
        """Reviewers allowed to decide this tool's proposals by its own roles (any when none are set)."""
        return self.reviewers_with(self.for_tool(tool).roles)

    def reviewers_with(self, roles: tuple[str, ...]) -> tuple[Reviewer, ...]:
        """Reviewers with any of ``roles`` (every reviewer when ``roles`` is empty)."""
        wanted = set(roles)
        return tuple(r for r in self.reviewers if not wanted or wanted & set(r.roles))


@dataclass(frozen=True)
class BudgetConfig:
    """Daily (UTC) dollar caps on model calls, shared by every Lambda; None: no cap."""

    daily_usd: float | None = None  # all tasks together, per UTC day; none: no cap
    tasks: Mapping[str, float] = field(default_factory=dict)  # [budget.tasks]: task name → daily cap


@dataclass(frozen=True)
class RateLimitConfig:
    """A shared per-minute limit; ``tokens_per_minute`` None limits requests only."""

    requests_per_minute: int  # set a little under your organisation's API limit
    tokens_per_minute: int | None = None  # prompt estimate + max_tokens per call; none: requests only


@dataclass(frozen=True)
class CapacityConfig:
    """Shared rate limits per model and per source, and the per-process fallbacks."""

    models: Mapping[str, RateLimitConfig] = field(default_factory=dict)
    sources: Mapping[str, RateLimitConfig] = field(default_factory=dict)
    fallback_requests_per_minute: int = 5  # per process, while the State table is unavailable
    retry_budget_ratio: float = 0.2  # retries may add at most this share of first attempts
    count_tokens: bool = False  # input guard: ask the API's count_tokens endpoint (else estimate)
    calls_per_admission: int = 5  # a run's model calls admitted (held and taken) by one write
    shards: int = 16  # items each shared counter (spend, rate buckets, usage, pending) is spread over


@dataclass(frozen=True)
class ScheduleConfig:
    """A task triggered by a schedule: ``[schedules.<name>]`` (its event type is the name)."""

    expression: str  # as in template.yaml: "cron(17 6 ? * MON-FRI *)" (UTC)
    catch_up: str = "each"  # missed occurrences: "each" enqueues every one, "once" only the latest
    description: str = ""  # what it is for, in the job registry (default: "the NAME task, as an inbox event")


@dataclass(frozen=True)
class ProviderPrice:
    """``[models."<id>".<provider>]``: a model id's prices on one provider, USD per million tokens."""

    input: float  # uncached input on this provider (cache writes: × 1.25 or × 2, as above)
    output: float  # the reply's tokens on this provider
    cache_read: float  # input read from the prompt cache on this provider


@dataclass(frozen=True)
class ModelConfig:
    """Prices of a model id Lockgate has no published price for, in USD per million tokens.

    Dated ids match by prefix, as the published ones do: `[models."claude-haiku-6"]` prices
    `claude-haiku-6-latest` and the dated id the API answers as. An entry for a published id
    replaces its published price (a negotiated rate). The three prices apply on every provider;
    a table per provider (`[models."claude-sonnet-5-5".bedrock]`) prices it there instead, and
    may stand alone (a rate on one provider only, e.g. for an application inference profile).
    """

    input: float | None = None  # uncached input; a cache write costs this × 1.25 (5 minutes) or × 2 (1 hour)
    output: float | None = None  # the reply's tokens
    cache_read: float | None = None  # input read from the prompt cache
    # The shortest prompt prefix the API caches for this model; not set: Lockgate's figure for the
    # family, else the largest it knows (so nothing is assumed cached that might not be).
    min_cacheable_tokens: int | None = None
    providers: Mapping[str, ProviderPrice] = field(default_factory=dict)  # provider name → its prices

    def price_on(self, provider: str) -> ProviderPrice | None:
        """This id's prices on ``provider``: its own table's, else the flat ones; None: not priced there."""
        if provider in self.providers:
            return self.providers[provider]
        if self.input is None or self.output is None or self.cache_read is None:
            return None
        return ProviderPrice(self.input, self.output, self.cache_read)


@dataclass(frozen=True)
class WorkflowsConfig:
    """Your workflows: packages beside the library (``workflows/NAME/``), each with ``register(setup)``."""

    # Registered in this order; task names are unique across them. `package = "name"` (one
    # package, the older spelling) is read as `packages = ["name"]`; giving both is an error.
    packages: tuple[str, ...] = ()


@dataclass(frozen=True)
class LockgateConfig(ReceiptConfig):
    """The whole file: the receiver's sections (``sources``, ``inbox``) and everything else."""

    workflows: WorkflowsConfig = field(default_factory=WorkflowsConfig)
    approvals: ApprovalsConfig = field(default_factory=ApprovalsConfig)
    budget: BudgetConfig = field(default_factory=BudgetConfig)
    capacity: CapacityConfig = field(default_factory=CapacityConfig)
    schedules: Mapping[str, ScheduleConfig] = field(default_factory=dict)
    models: Mapping[str, ModelConfig] = field(default_factory=dict)  # [models."<id>"]: extra prices
    provider: ProviderConfig = field(default_factory=ProviderConfig)  # [provider]: who answers model calls
    mcp: Mapping[str, McpServerConfig] = field(default_factory=dict)  # [mcp.servers.NAME]: MCP servers
