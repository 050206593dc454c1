"""An offline model for the triage task: it answers by rules, so tests and the local stack need no Claude.

Use it with `lockgate local --model triage.model:scripted_model` and
`lockgate eval triage --model triage.model:scripted_model --runs 5`.
"""

from __future__ import annotations

from lockgate_infra.testing import ScriptedModel, call, when


def scripted_model() -> ScriptedModel:
    """Read the issue; a crash is a bug, a how-to a question (with a comment), a duplicate is closed."""
    return ScriptedModel(
        "triage",
        when(r"issue=(?P<issue>\S+#\d+)").call("read_issue", issue="{issue}"),
        when(r"(?i)\b(crash\w*|traceback|exception|error)\b", after="read_issue").call(
            "add_label", issue="{issue}", label="bug"
        ),
        when(r"(?i)\bhow (do|can) i\b", after="read_issue").calls(
            call("add_label", issue="{issue}", label="question"),
            call(
                "comment",
                issue="{issue}",
                text="Thanks for asking! The docs cover this: see Getting started.",
            ),
        ),
        when(r"(?i)duplicate of (?P<original>#\d+)", after="read_issue").calls(
            call("add_label", issue="{issue}", label="duplicate"),
            call("close_issue", issue="{issue}", reason="duplicate of {original}"),
        ),
        finish="Triaged {issue}.",
    )
