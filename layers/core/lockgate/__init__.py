"""Lockgate core: verified webhooks, an idempotent inbox, leases and the agent runtime.

Workflow authors need only this module's names::

    from lockgate import Risk, RunFacts, Setup, Task, TaskContext, Tool, ToolContext, ToolError
    from lockgate import Part, Resource  # the AWS resources a workflow declares (RESOURCES)

Every name, with what each of its fields means, is in the API reference (docs/reference/api.md),
read from the docstrings.

Packages, each importing only from those below it (``tests/unit/test_layers.py`` checks)::

    runtime             each function's object graph, built in one place from its settings
    jobs, evals         scheduled jobs (sweeps, expiry, reconciliation, digests, batch collection);
                        the eval harness's cases, checks and judge
    workflows           Setup and load_workflows: how workflows packages register themselves
    approvals           proposals, signed links, pages, a reviewer's decision, running what was approved
    agent               tasks, the durable tool loop, runs, intake, screening
    actions             tools, the guard's ruling, the operation ledger, the one run-once path
    capacity            spend caps, rate limits, circuit breaker, admission of each model call
    model               the Messages API client, retry budget, prices, usage, prompt and response caches
    inbox               receipt, the idempotent inbox store and queue, the worker's lease loop, routing
    webhooks            the signature schemes, delivery identity, the event a body carries (any content type)
    mcp                 tools from MCP servers: definitions as pinned, the pin file, a client whose
                        failures are typed (the SDK loads only when a server is called)
    foundations         clock, errors, config, settings, secrets, dynamo, telemetry, tracing, http,
                        freshness, restore, schema, exports, declared (a workflow's AWS resources), shards
                        (shared counters spread over item keys), index_shards (status indexes too)

Names load on first use, so importing a submodule (the receiver imports ``lockgate.inbox.receipt``)
never pays for pydantic or the agent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lockgate.exports import lazy_exports

__version__ = "0.1.0"

# Public name → the module that defines it.
_PUBLIC = {
    "BadDelivery": "lockgate.errors",
    "DecisionNotice": "lockgate.agent.tasks",
    "ApprovalRule": "lockgate.config.rules",
    "Fact": "lockgate.actions.facts",
    "InboxEvent": "lockgate.inbox.routing",
    "Intake": "lockgate.agent.intake",
    "McpServer": "lockgate.actions.mcp_tools",
    "OutcomeUnknown": "lockgate.actions.tools",
    "Part": "lockgate.declared",
    "Policy": "lockgate.actions.tools",
    "Resource": "lockgate.declared",
    "Risk": "lockgate.actions.tools",
    "RunFacts": "lockgate.actions.facts",
    "Setup": "lockgate.workflows",
    "Skip": "lockgate.agent.tasks",
    "Start": "lockgate.agent.tasks",
    "Task": "lockgate.agent.tasks",
    "TaskContext": "lockgate.inbox.routing",
    "Tool": "lockgate.actions.tools",
    "ToolContext": "lockgate.actions.tools",
    "ToolError": "lockgate.actions.tools",
    "Verdict": "lockgate.actions.tools",
    "describe_validation_error": "lockgate.actions.tools",
    "fingerprint": "lockgate.actions.tools",
    "values_in_source": "lockgate.agent.structured",
}
__all__ = [
    "ApprovalRule",
    "BadDelivery",
    "DecisionNotice",
    "Fact",
    "InboxEvent",
    "Intake",
    "McpServer",
    "OutcomeUnknown",
    "Part",
    "Policy",
    "Resource",
    "Risk",
    "RunFacts",
    "Setup",
    "Skip",
    "Start",
    "Task",
    "TaskContext",
    "Tool",
    "ToolContext",
    "ToolError",
    "Verdict",
    "describe_validation_error",
    "fingerprint",
    "values_in_source",
]

if TYPE_CHECKING:
    from lockgate.actions.facts import Fact, RunFacts
    from lockgate.actions.mcp_tools import McpServer
    from lockgate.actions.tools import (
        OutcomeUnknown,
        Policy,
        Risk,
        Tool,
        ToolContext,
        ToolError,
        Verdict,
        describe_validation_error,
        fingerprint,
    )
    from lockgate.agent.intake import Intake
    from lockgate.agent.structured import values_in_source
    from lockgate.agent.tasks import DecisionNotice, Skip, Start, Task
    from lockgate.config.rules import ApprovalRule
    from lockgate.declared import Part, Resource
    from lockgate.errors import BadDelivery
    from lockgate.inbox.routing import InboxEvent, TaskContext
    from lockgate.workflows import Setup


__getattr__ = lazy_exports(__name__, _PUBLIC)
