"""Several workflows packages load in order; each one's declared resources are checked before any registers.

Fake packages are modules put in ``sys.modules`` for one test (pytest's monkeypatch restores it):
what ``load_workflows`` imports by name, without a folder on disk.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest

from lockgate import Part, Resource, Start, Task
from lockgate.errors import ConfigError
from lockgate.inbox.routing import Router, no_task
from lockgate.workflows import Setup, check_workflow_environment, declared_resources, load_workflows

TABLE = Resource("TriageLabelsTable", variable="TRIAGE_LABELS_TABLE", worker=("dynamodb:GetItem",))


def task(name: str, source: str = "github", event_type: str = "issues.opened") -> Task:
    return Task(
        name=name,
        source=source,
        event_type=event_type,
        system="triage",
        tools=(),
        start=lambda event, services: Start(prompt="hi"),
    )


def package(
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    register: Callable[[Setup], None] | None,
    resources: Any = (),
) -> list[str]:
    """A fake workflows package called ``name``; returns the log its register appends to."""
    module = ModuleType(name)
    calls: list[str] = []
    if register is not None:

        def registering(setup: Setup) -> None:
            calls.append(name)
            register(setup)

        module.register = registering  # type: ignore[attr-defined]
    module.RESOURCES = resources  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, name, module)
    return calls


def setup(environ: dict[str, str] | None = None) -> Setup:
    return Setup(router=Router(), environ=environ or {}, client=lambda name: None)


def test_given_two_packages_then_each_registers_in_the_configured_order(monkeypatch) -> None:
    # Given a shop-like and a triage-like package, each adding its own task
    package(monkeypatch, "wf_first", lambda s: s.add_task(task("inbox", "helpdesk", "*")))
    package(monkeypatch, "wf_second", lambda s: s.add_task(task("triage")), (TABLE,))
    here = setup({"TRIAGE_LABELS_TABLE": "labels"})
    # When both are loaded
    load_workflows(["wf_first", "wf_second"], here)
    # Then their tasks are registered in the config's order, each owned by its workflow
    assert [t.name for t in here.tasks] == ["inbox", "triage"]
    assert [here.workflow_of(t.name) for t in here.tasks] == ["wf_first", "wf_second"]
    assert here.workflow == ""  # no package is registering any more


def test_given_one_package_name_then_it_is_loaded_as_a_list_of_one(monkeypatch) -> None:
    calls = package(monkeypatch, "wf_only", lambda s: None)
    load_workflows("wf_only", setup())
    assert calls == ["wf_only"]


@pytest.mark.parametrize(
    ("first", "message"),
    [
        (
            task("triage", "helpdesk", "*"),  # the same name, another trigger
            "workflow wf_second registers a task called 'triage', which workflow wf_first already "
            "registered; task names are unique across workflows: rename one",
        ),
        (
            task("labels"),  # another name, the same trigger
            "workflow wf_second's task 'triage' and workflow wf_first's task 'labels' both start on "
            "github 'issues.opened'; give one another trigger",
        ),
    ],
    ids=["same-name", "same-trigger"],
)
def test_given_two_workflows_whose_tasks_clash_then_the_error_names_both(monkeypatch, first, message) -> None:
    package(monkeypatch, "wf_first", lambda s: s.add_task(first))
    package(monkeypatch, "wf_second", lambda s: s.add_task(task("triage")))
    with pytest.raises(ConfigError) as raised:
        load_workflows(["wf_first", "wf_second"], setup())
    assert str(raised.value) == message


def test_given_two_workflows_routing_the_same_event_then_the_error_names_the_second(monkeypatch) -> None:
    package(monkeypatch, "wf_first", lambda s: s.router.add("partner", "order.updated", no_task))
    package(monkeypatch, "wf_second", lambda s: s.router.add("partner", "order.updated", no_task))
    with pytest.raises(ConfigError, match=r"^workflow wf_second: a handler for partner 'order.updated' is"):
        load_workflows(["wf_first", "wf_second"], setup())


def test_given_a_declared_variable_unset_then_no_workflow_registers_and_the_error_says_what_to_add(
    monkeypatch,
) -> None:
    # Given a first workflow that needs nothing and a second whose table's variable is not set
    first = package(monkeypatch, "wf_first", lambda s: s.add_task(task("inbox", "helpdesk", "*")))
    second = package(monkeypatch, "wf_second", lambda s: s.add_task(task("triage")), (TABLE,))
    here = setup({"TRIAGE_LABELS_TABLE": "  "})  # set but blank counts as unset
    # When the function loads its workflows at start
    with pytest.raises(ConfigError) as raised:
        load_workflows(["wf_first", "wf_second"], here)
    # Then it refuses, naming the workflow, the resource, the variable and the template line
    assert str(raised.value) == (
        "workflow wf_second: resource TriageLabelsTable needs the environment variable "
        "TRIAGE_LABELS_TABLE, which this function does not set; in template.yaml add "
        "`TRIAGE_LABELS_TABLE: !Ref TriageLabelsTable` to its Environment Variables "
        "(and run `lockgate check`)"
    )
    # And neither workflow ran half-configured beside the other: nothing registered
    assert (first, second, here.tasks) == ([], [], [])


def test_given_the_start_check_then_each_workflow_is_checked_as_load_workflows_checks_it(monkeypatch) -> None:
    package(monkeypatch, "wf_second", None, (TABLE,))
    check_workflow_environment(["wf_second"], {"TRIAGE_LABELS_TABLE": "labels"})
    with pytest.raises(ConfigError, match="^workflow wf_second: resource TriageLabelsTable needs"):
        check_workflow_environment(["wf_second"], {})


@pytest.mark.parametrize(
    ("name", "register", "resources", "message"),
    [
        ("no_such_package_here", None, (), "workflows package 'no_such_package_here' cannot be imported"),
        ("wf_plain", None, (), r"workflows package 'wf_plain' has no register\(setup\) function"),
        (
            "wf_plain",
            lambda s: None,
            ["TriageLabelsTable"],
            r"workflow wf_plain: RESOURCES must be a tuple of lockgate.Resource\(...\), got \['Tria",
        ),
    ],
)
def test_given_a_broken_package_then_the_error_names_it(
    monkeypatch, name, register, resources, message
) -> None:
    if name != "no_such_package_here":
        package(monkeypatch, name, register, resources)
    with pytest.raises(ConfigError, match=message):
        load_workflows([name], setup())


def test_given_one_resource_instead_of_a_tuple_then_it_is_read_as_one() -> None:
    module = ModuleType("wf_single")
    module.RESOURCES = TABLE  # type: ignore[attr-defined]
    assert declared_resources("wf_single", module) == (TABLE,)


# ------------------------------------------------------------------ the declaration itself


def test_given_a_declaration_then_each_function_needs_its_own_actions_on_each_part() -> None:
    mail = Resource(
        "ShopMailTable",
        variable="SHOP_MAIL_TABLE",
        worker=["dynamodb:GetItem", "dynamodb:PutItem"],  # a list is kept as a tuple
        jobs="dynamodb:GetItem",  # so is one action
        parts=[Part("index/by-sender", worker=("dynamodb:Query",))],
    )
    assert (mail.worker, mail.jobs) == (("dynamodb:GetItem", "dynamodb:PutItem"), ("dynamodb:GetItem",))
    assert list(mail.needs("worker")) == [
        ("", "dynamodb:GetItem"),
        ("", "dynamodb:PutItem"),
        ("index/by-sender", "dynamodb:Query"),
    ]
    assert list(mail.needs("jobs")) == [("", "dynamodb:GetItem")]
    assert mail.template_line() == "SHOP_MAIL_TABLE: !Ref ShopMailTable"


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            lambda: Resource("ShopMailTable", "SHOP_MAIL_TABLE", worker=("GetItem",)),
            "Resource ShopMailTable: 'GetItem' in worker= is not an IAM action; write service:Action, "
            "e.g. dynamodb:GetItem",
        ),
        (lambda: Resource("Shop-Mail", "SHOP_MAIL_TABLE"), "Resource 'Shop-Mail': a logical id is letters"),
        (
            lambda: Resource("ShopMailTable", "shop mail"),
            "Resource ShopMailTable: 'shop mail' is not an environment variable name",
        ),
        (lambda: Part("/index/by-sender"), "Part '/index/by-sender': a path looks like index/by-customer"),
        (
            lambda: Part("index/by-sender", jobs=("dynamodb Query",)),
            "Part 'index/by-sender': 'dynamodb Query' in jobs= is not an IAM action",
        ),
        (
            lambda: Resource("ShopMailTable", "SHOP_MAIL_TABLE", parts=("index/by-sender",)),  # type: ignore[arg-type]
            "Resource ShopMailTable: parts holds 'index/by-sender', not a Part",
        ),
    ],
)
def test_given_a_malformed_declaration_then_it_is_refused_where_it_is_written(make, message: str) -> None:
    with pytest.raises(ValueError) as raised:
        make()
    assert str(raised.value).startswith(message)


def test_given_a_malformed_declaration_at_import_then_loading_names_the_workflow(
    monkeypatch, tmp_path
) -> None:
    # Given a package on disk whose RESOURCES spell an action without its service
    (tmp_path / "wf_broken").mkdir()
    (tmp_path / "wf_broken" / "__init__.py").write_text(
        "from lockgate import Resource\n"
        'RESOURCES = (Resource("ShopMailTable", "SHOP_MAIL_TABLE", worker=("GetItem",)),)\n'
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    # Then loading it is a ConfigError that names the workflow and the mistake
    with pytest.raises(
        ConfigError, match="^workflow wf_broken: Resource ShopMailTable: 'GetItem' in worker="
    ):
        load_workflows(["wf_broken"], setup())
