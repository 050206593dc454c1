"""The API reference's groups: each section's title, what it is for, its import line and its names.

The page (``lockgate_infra.docsite.api_page``) shows every public name under the group listed
here, in this order; ``tests/unit/test_api_reference.py`` fails when a public name is in none.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Group:
    """One section of the page: a title, what it is for, the import line, and its names in order."""

    title: str
    intro: str
    imports: str
    names: tuple[str, ...]  # each shown under its public path (lockgate.Task), read where defined


INTRO = """\
Everything a workflows package imports, written out from the code's docstrings: every name
`lockgate` exports and the test kit, `lockgate_infra.testing`. A field's sentence says what it
means and what its default does. `python -m lockgate_infra.docsite` writes this page; a test fails
when a public name, or a field of one, has no docstring, or when the page is stale."""

GROUPS = (
    Group(
        "A task",
        "A task says what starts it (a source and event type, or a schedule), what the model is told, "
        "the tools it may call and its limits; its `start` turns the event into the first message and "
        "the run's facts, or says `Skip` for an event the task does not act on.",
        "from lockgate import DecisionNotice, InboxEvent, Skip, Start, Task",
        (
            "lockgate.Task",
            "lockgate.Start",
            "lockgate.Skip",
            "lockgate.InboxEvent",
            "lockgate.DecisionNotice",
        ),
    ),
    Group(
        "Tools and their checks",
        "A tool is a function with a pydantic argument model and a risk level. Every call is checked "
        "in order (allowed for the task, the arguments' schema, hard policies, taint, approval "
        "thresholds), then a side effect runs once, through the operation ledger.",
        "from lockgate import OutcomeUnknown, Risk, Tool, ToolContext, ToolError\n"
        "from lockgate import describe_validation_error, fingerprint",
        (
            "lockgate.Tool",
            "lockgate.Risk",
            "lockgate.ToolContext",
            "lockgate.ToolError",
            "lockgate.OutcomeUnknown",
            "lockgate.describe_validation_error",
            "lockgate.fingerprint",
        ),
    ),
    Group(
        "Facts and policies",
        "Facts come from your own systems, never from the model or what it read; policies are pure "
        "functions of a call's validated arguments and those facts, and answer with a `Verdict`.",
        "from lockgate import Fact, Policy, RunFacts, Verdict",
        ("lockgate.RunFacts", "lockgate.Policy", "lockgate.Verdict", "lockgate.Fact"),
    ),
    Group(
        "Approval rules",
        "Who must approve a call may depend on its arguments: thresholds in lockgate.toml "
        "(`[[approvals.tools.NAME.rules]]`) and a tool's `approval_rules` hook, which returns these. "
        "Rules only ask for more, and are read again on every edited version (docs/approvals.md).",
        "from lockgate import ApprovalRule",
        ("lockgate.ApprovalRule",),
    ),
    Group(
        "Tools from MCP servers",
        '`setup.mcp("name")` gives a server lockgate.toml configures (`[mcp.servers.NAME]`) with the '
        "definitions pinned in the workflow (`lockgate mcp pin`); its `tools(...)` are ordinary `Tool`s "
        "named `server__tool`, under the same checks, approvals and ledger (docs/mcp.md).",
        "from lockgate import McpServer",
        ("lockgate.McpServer",),
    ),
    Group(
        "Registering a workflow and its resources",
        "A workflows package has a `register(setup)` function, which the functions that load "
        "workflows (the agent worker, the scheduled jobs) call at start, and declares the AWS "
        "resources it uses in `RESOURCES`; the example is `workflows/shop/__init__.py`. Besides "
        "tasks, it may route an event to a plain handler, `handler(event, context) -> str`.",
        "from lockgate import BadDelivery, Part, Resource, Setup, TaskContext",
        (
            "lockgate.Setup",
            "lockgate.Resource",
            "lockgate.Part",
            "lockgate.TaskContext",
            "lockgate.BadDelivery",
        ),
    ),
    Group(
        "Structured intake",
        "Before a task acts, an intake can read the request out of the event into a pydantic model "
        "with structured output, trying a cheap model first and handing the event to a person when "
        "none succeeds.",
        "from lockgate import Intake, values_in_source",
        ("lockgate.Intake", "lockgate.values_in_source"),
    ),
    Group(
        "Testing your workflow",
        "A scripted model answers your task with calls to your tools, and `TestStack` runs your "
        "workflows on the embedded stack in the test's own process. The pytest plugin comes with "
        "Lockgate: a test names the fixture `lockgate_stack` and gets a started stack, without an "
        "import. `RecordingApi` plays an outside API your tools call, recording each call by its "
        "idempotency key. Where a `ScriptedModel`'s rules cannot say what your model should do, write "
        "it by hand on a `Conversation`, as the example shop's is (`workflows/shop/offline/`).",
        "from lockgate_infra.testing import Call, Rule, ScriptError, ScriptedModel, call, when\n"
        "from lockgate_infra.testing import LedgerView, Sent, TestStack, TestStackError\n"
        "from lockgate_infra.testing import RecordedCall, RecordingApi\n"
        "from lockgate_infra.testing import Conversation, Reply, ToolCall",
        (
            "lockgate_infra.testing.ScriptedModel",
            "lockgate_infra.testing.when",
            "lockgate_infra.testing.call",
            "lockgate_infra.stub.scripted.When",
            "lockgate_infra.testing.Rule",
            "lockgate_infra.testing.Call",
            "lockgate_infra.testing.ScriptError",
            "lockgate_infra.testing.TestStack",
            "lockgate_infra.testing.Sent",
            "lockgate_infra.testing.TestStackError",
            "lockgate_infra.testing.LedgerView",
            "lockgate_infra.testing.RecordingApi",
            "lockgate_infra.testing.RecordedCall",
            "lockgate_infra.testing.Conversation",
            "lockgate_infra.testing.Reply",
            "lockgate_infra.testing.ToolCall",
        ),
    ),
    Group(
        "Fixtures",
        "A test asks for one by name. To give `lockgate_stack` your model, define a fixture called "
        "`lockgate_model` (in your `conftest.py` or the test module) that returns it; to point your "
        "adapters at stand-ins, one called `lockgate_environment`.",
        "",
        (
            "lockgate_infra.testing.plugin.lockgate_model",
            "lockgate_infra.testing.plugin.lockgate_environment",
            "lockgate_infra.testing.plugin.lockgate_stack",
        ),
    ),
)
