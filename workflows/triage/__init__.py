"""The second example workflow: triage of a repository's new GitHub issues.

Made with `lockgate new workflow triage --source github --event issues.opened`, then shaped into
triage. For each issue opened, the agent reads it (its text is the author's: untrusted), labels
it at once from a fixed set, and asks a person before it comments or closes. The issues, with
the labels, comments and closing the workflow made, are kept in its table (TriageIssuesTable).
To act on GitHub itself, give ``Issues`` the REST calls (see docs/getting-started.md, "The
triage example"); the tools, policies and approvals stay as they are.
"""

from __future__ import annotations

from lockgate import Resource, Setup

# What this workflow uses in AWS: `lockgate check` compares it with template.yaml.
RESOURCES = (
    Resource(
        "TriageIssuesTable",
        variable="TRIAGE_ISSUES_TABLE",
        worker=("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"),
    ),
)


def register(setup: Setup) -> None:
    """Add the triage task to the worker; its table's name is in the function's environment."""
    from triage.issues import Issues
    from triage.task import triage_task

    issues = Issues(setup.client("dynamodb"), setup.environ["TRIAGE_ISSUES_TABLE"], setup.clock)
    setup.add_task(triage_task(issues))
