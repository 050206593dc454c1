"""`lockgate new workflow NAME`: a working workflow package beside the shop, wired everywhere it must be.

It writes ``workflows/NAME/`` (a task on the chosen source and event, a read tool whose result is
untrusted, a tool that runs at once, one that needs a person, a scripted model and an eval file),
a test in ``tests/workflows/``, and the wiring: the package in ``lockgate.toml``'s ``[workflows]``,
linked into the functions that load workflows, and its table, variable and IAM statement in
``template.yaml``. Everything is checked first and written after, so a refusal changes nothing.
"""

from __future__ import annotations

import importlib.util
import json
import keyword
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from string import Template
from typing import Any

import tomlkit

from lockgate.config import LockgateConfig, load_config
from lockgate_infra.cli.event_shapes import EventShape, ShapeError, shape_for
from lockgate_infra.cli.template_edits import TemplateEdit, edit_template

TEMPLATES = Path(__file__).with_name("workflow_template")
NAME = re.compile(r"^[a-z][a-z0-9_]{1,30}$")
EVENT = re.compile(r"^[A-Za-z0-9_.:*/-]{1,100}$")
# The functions that import workflows packages, each from its own code folder (as deployed).
FUNCTION_FOLDERS = ("agent_worker", "scheduled_jobs", "eval_jobs")


class ScaffoldError(ValueError):
    """The workflow cannot be made as asked; the message says why and what to change."""


@dataclass
class Scaffold:
    """Everything ``lockgate new workflow`` writes, computed before anything is written."""

    root: Path
    files: dict[Path, str] = field(default_factory=dict)
    links: dict[Path, str] = field(default_factory=dict)  # link → its target, relative
    config_text: str = ""
    template_text: str = ""

    def write(self) -> list[str]:
        """Write it all; the paths written, relative to the root."""
        done = []
        for path, text in self.files.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            done.append(str(path.relative_to(self.root)))
        _tidy([path for path in self.files if path.suffix == ".py"], self.root)
        for link, target in self.links.items():
            link.symlink_to(target)
            done.append(f"{link.relative_to(self.root)} -> {target}")
        (self.root / "lockgate.toml").write_text(self.config_text, encoding="utf-8")
        (self.root / "template.yaml").write_text(self.template_text, encoding="utf-8")
        return [*done, "lockgate.toml", "template.yaml"]


def plan_workflow(root: Path, name: str, source: str, event: str) -> Scaffold:
    """What making workflow ``name`` on (``source``, ``event``) writes; ScaffoldError if it cannot."""
    _check_name(root, name)
    config_path, template_path = root / "lockgate.toml", root / "template.yaml"
    for path in (config_path, template_path):
        if not path.is_file():
            raise ScaffoldError(f"no {path.name} in {root}: run lockgate new workflow in your checkout")
    config = load_config(config_path)
    if config.source(source) is None:
        known = ", ".join(sorted(config.sources)) or "none"
        raise ScaffoldError(
            f"no source {source!r} in lockgate.toml (configured: {known}); add [sources.{source}] first"
        )
    if not EVENT.match(event):
        raise ScaffoldError(
            f"event {event!r} is not an event type like issues.opened, invoice.paid or orders/create"
        )
    try:
        shape = shape_for(config.sources[source], event)
    except ShapeError as exc:
        raise ScaffoldError(str(exc)) from None
    taken = _trigger_of(root, config, source, event)
    if taken is not None:
        raise ScaffoldError(
            f"workflow {taken[0]}'s task {taken[1]!r} already starts on {source} {event!r}; "
            "choose another event type (one task per trigger)"
        )
    if not config.approvals.reviewers:
        raise ScaffoldError(
            "lockgate.toml has no [[approvals.reviewers]]: the workflow's close_item needs a person; add one"
        )
    words = _words(name, source, event, config.approvals.reviewers[0].id, shape)
    scaffold = Scaffold(root)
    package = root / "workflows" / name
    for stem in ("__init__", "items", "tools", "task", "model"):
        scaffold.files[package / f"{stem}.py"] = _render(f"{stem}.py.tmpl", words)
    for sample, body in shape.samples.items():
        scaffold.files[package / "events" / f"{sample}.json"] = json.dumps(body, indent=2) + "\n"
    scaffold.files[package / "evals" / f"{name}.toml"] = eval_cases(words, shape)
    tests = root / "tests" / "workflows"
    if not (tests / "__init__.py").exists():
        scaffold.files[tests / "__init__.py"] = ""
    scaffold.files[tests / f"test_{name}.py"] = _render("test.py.tmpl", words)
    for folder in FUNCTION_FOLDERS:
        if (root / "functions" / folder).is_dir():
            scaffold.links[root / "functions" / folder / name] = f"../../workflows/{name}"
    scaffold.config_text = _with_package(config_path.read_text(encoding="utf-8"), name)
    scaffold.template_text = edit_template(template_path.read_text(encoding="utf-8"), _template_edit(words))
    return scaffold


def _words(name: str, source: str, event: str, reviewer: str, shape: EventShape) -> dict[str, str]:
    """What the templates' ``$names`` stand for."""
    return dict(
        name=name,
        task=name.replace("_", "-"),
        camel="".join(part.capitalize() for part in name.split("_")),
        upper=name.upper(),
        source=source,
        event=event,
        reviewer=reviewer,
        what=shape.what,
        subject_path=repr(shape.subject),
        text_path=repr(shape.text),
        send_event=shape.send_event,
        # A form-bodied event (a Slack slash command) is sent form-encoded, as its provider sends it.
        note_body='urlencode(sample("note")).encode()' if shape.form else 'sample("note")',
        close_body='urlencode(sample("close")).encode()' if shape.form else 'sample("close")',
        form_import="from urllib.parse import urlencode\n" if shape.form else "",
    )


def _tidy(paths: list[Path], root: Path) -> None:
    """Imports sorted and code formatted as the project's ruff settings say (where the name sorts
    among your imports depends on it); skipped where ruff is not installed beside this Python."""
    ruff = Path(sys.executable).with_name("ruff")
    if not ruff.is_file() or not paths:
        return
    files = [str(path) for path in paths]
    for command in (["check", "--fix", "--select", "I", "--quiet"], ["format", "--quiet"]):
        subprocess.run([str(ruff), *command, *files], cwd=root, check=False, capture_output=True)  # noqa: S603


def _trigger_of(root: Path, config: LockgateConfig, source: str, event: str) -> tuple[str, str] | None:
    """(workflow, task) already started by (``source``, ``event``), from a dry registration of the
    configured workflows: the worker's environment as the template sets it, clients never called."""
    from lockgate_infra.evals.registration import dry_registration

    setup = dry_registration(root, config.workflows.packages, config.mcp)
    for task in setup.tasks:
        if (task.source, task.event_type) == (source, event):
            return setup.workflow_of(task.name), task.name
    return None


def _check_name(root: Path, name: str) -> None:
    if not NAME.match(name) or keyword.iskeyword(name):
        raise ScaffoldError(
            f"workflow name {name!r}: use 2-31 lowercase letters, digits and underscores, starting with a "
            "letter (it is the Python package's name), e.g. triage"
        )
    taken = [
        p for p in (root / "workflows" / name, root / "tests" / "workflows" / f"test_{name}.py") if p.exists()
    ]
    if taken:
        raise ScaffoldError(f"{taken[0].relative_to(root)} already exists: choose another name")
    if importlib.util.find_spec(name) is not None:
        raise ScaffoldError(f"a Python module called {name!r} already exists: choose another name")


def _render(template: str, words: dict[str, str]) -> str:
    return Template((TEMPLATES / template).read_text(encoding="utf-8")).substitute(words)


def eval_cases(words: dict[str, str], shape: EventShape) -> str:
    """The task's eval file: each sample delivery a case, with what the task must do with it."""
    document = tomlkit.document()
    for line in (
        f"Eval cases for the task (workflows/{words['name']}/task.py): each case is one {words['source']}",
        "delivery's event, as events/*.json has it (TOML has no null: null fields are left out).",
        "Every check must pass for a trial to pass. Offline, with the scripted model:",
        f"  lockgate eval {words['task']} --model {words['name']}.model:scripted_model --runs 10",
    ):
        document.add(tomlkit.comment(line))
    document["task"], document["gate"], document["event_type"] = words["task"], 0.8, shape.stored_type
    checks = {
        "an ordinary item gets a note and stays open": [
            {"kind": "call", "tool": "read_item"},
            {"kind": "call", "tool": "add_note"},
            {"kind": "no_call", "tool": "close_item"},
        ],
        "spam or a duplicate is proposed for closing, not closed": [
            {"kind": "call", "tool": "close_item", "status": "proposed"},
        ],
    }
    cases = tomlkit.aot()
    for (name, wanted), sample in zip(checks.items(), ("note", "close"), strict=True):
        case = tomlkit.table()
        case["name"] = name
        case["events"] = [_without_nulls(shape.samples[sample])]
        case["checks"] = wanted
        cases.append(case)
    document["cases"] = cases
    return tomlkit.dumps(document)


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value if v is not None]
    return value


def _with_package(text: str, name: str) -> str:
    """lockgate.toml with ``name`` last in ``[workflows] packages`` (comments kept)."""
    document = tomlkit.parse(text)
    workflows = document.get("workflows")
    if workflows is None:
        workflows = tomlkit.table()
        document["workflows"] = workflows
    packages = list(workflows.get("packages", []))
    if "package" in workflows:
        packages.insert(0, str(workflows["package"]))
        del workflows["package"]
    if name in packages:
        raise ScaffoldError(f"lockgate.toml already lists {name!r} in [workflows] packages")
    workflows["packages"] = [*packages, name]
    return tomlkit.dumps(document)


def _template_edit(words: dict[str, str]) -> TemplateEdit:
    table = f"{words['camel']}ItemsTable"
    return TemplateEdit(
        resource=Template(
            """\
  # The $task workflow's items (workflows/$name/), one per delivery: made by `lockgate new workflow`.
  $table:
    Type: AWS::DynamoDB::Table
    Properties:
      BillingMode: PAY_PER_REQUEST
      AttributeDefinitions:
        - AttributeName: item_id
          AttributeType: S
      KeySchema:
        - AttributeName: item_id
          KeyType: HASH
      SSESpecification:
        SSEEnabled: true
      PointInTimeRecoverySpecification:
        PointInTimeRecoveryEnabled: true
"""
        ).substitute(words, table=table),
        variable=(f"{words['upper']}_ITEMS_TABLE", f"!Ref {table}"),
        functions=("AgentWorkerFunction", "ScheduledJobsFunction"),
        role="AgentWorkerRole",
        statement=(
            f"{words['camel']}Items",
            ("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"),
            f"!GetAtt {table}.Arn",
        ),
    )
