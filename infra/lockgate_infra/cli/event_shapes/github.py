"""GitHub's shapes: X-GitHub-Event plus the body's "action", the event's object under its own name."""

from __future__ import annotations

from lockgate.config import SourceConfig
from lockgate_infra.cli.event_shapes.shape import JSON, EventShape, ShapeError

# Events whose deliveries always carry an "action": their type is EVENT.ACTION (issues.opened).
GITHUB_ACTIONED = frozenset(
    {
        "branch_protection_rule", "check_run", "check_suite", "code_scanning_alert", "commit_comment",
        "deployment", "deployment_status", "discussion", "discussion_comment", "installation",
        "issue_comment", "issues", "label", "member", "merge_group", "milestone", "package", "project",
        "pull_request", "pull_request_review", "pull_request_review_comment", "registry_package",
        "release", "repository", "star", "watch", "workflow_job", "workflow_run",
    }
)  # fmt: skip
# Event → (the object under its name, its subject field, its text field), from GitHub's payloads.
GITHUB_OBJECTS = {
    "issues": ("issue", "title", "body"),
    "pull_request": ("pull_request", "title", "body"),
    "discussion": ("discussion", "title", "body"),
    "release": ("release", "name", "body"),
    "milestone": ("milestone", "title", "description"),
}
GITHUB_COMMENTS = {"issue_comment": "issue", "discussion_comment": "discussion", "commit_comment": ""}
REPOSITORY = {
    "id": 1296269,
    "name": "Hello-World",
    "full_name": "octocat/Hello-World",
    "private": False,
    "html_url": "https://github.com/octocat/Hello-World",
}
SENDER = {"login": "octocat", "id": 1, "type": "User"}


def github(source: SourceConfig, event: str) -> EventShape:
    name, _, action = event.partition(".")
    if name in GITHUB_ACTIONED and not action:
        raise ShapeError(
            f"GitHub's {name!r} deliveries always carry an action, and their type is {name}.ACTION: "
            f"give one (e.g. {name}.{'opened' if name in ('issues', 'pull_request') else 'created'}) "
            f"or {name}.* for every action"
        )
    sample_action = "opened" if action in ("", "*") else action
    stored = f"{name}.{sample_action}" if name in GITHUB_ACTIONED or action else name
    texts = {
        "note": ("Export button does nothing", "Clicking Export on the reports page does nothing."),
        "close": ("Cheap watches", "Buy cheap watches now. This is spam."),
    }
    samples: dict[str, JSON] = {}
    for number, (key, (title, text)) in enumerate(texts.items(), start=1347):
        body: JSON = {"action": sample_action} if name in GITHUB_ACTIONED or action else {}
        if name in GITHUB_COMMENTS:
            parent = GITHUB_COMMENTS[name]
            if parent:
                body[parent] = {"number": number, "title": title, "state": "open", "user": SENDER}
            body["comment"] = {"id": number * 1000, "body": text, "user": SENDER}
        elif name == "push":
            commit = {"id": f"{number:040x}", "message": f"{title}\n\n{text}", "author": {"name": "Octo"}}
            body |= {"ref": "refs/heads/main", "commits": [commit], "head_commit": commit}
        else:
            key_name, subject_field, text_field = GITHUB_OBJECTS.get(name, (name, "title", "body"))
            body[key_name] = {
                "id": number,
                "number": number,
                subject_field: title,
                text_field: text,
                "state": "open",
                "html_url": f"https://github.com/octocat/Hello-World/issues/{number}",
                "user": SENDER,
            }
        samples[key] = body | {"repository": REPOSITORY, "sender": SENDER}
    if name in GITHUB_COMMENTS:
        parent = GITHUB_COMMENTS[name]
        subject: tuple[str, ...] = (parent, "title") if parent else ("comment", "body")
        text_path: tuple[str, ...] = ("comment", "body")
    elif name == "push":
        subject = text_path = ("head_commit", "message")
    else:
        key_name, subject_field, text_field = GITHUB_OBJECTS.get(name, (name, "title", "body"))
        subject, text_path = (key_name, subject_field), (key_name, text_field)
    return EventShape(
        f'GitHub "{event}" events',
        name,
        stored,
        subject,
        text_path,
        samples,
    )
