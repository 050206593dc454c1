"""`lockgate check`: the workflows' declared resources against template.yaml, one exact line per finding.

Each case takes the shipped template (translated once), breaks one thing the shop declares, and
asserts the precise line; the CLI cases run the command on a copy of the repository's files.
"""

from __future__ import annotations

import copy
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import tomlkit

from lockgate import Part, Resource
from lockgate_infra.cli import main as cli
from lockgate_infra.cli.check import declarations
from lockgate_infra.cli.iam import as_list, statements, translate_file
from lockgate_infra.cli.template_check import check_packaging, check_template
from lockgate_infra.local.template import load_template

ROOT = Path(__file__).resolve().parents[2]
SHOP = declarations(("shop",), ROOT / "workflows")


@pytest.fixture(scope="module")
def shipped() -> dict[str, Any]:
    return translate_file(ROOT / "template.yaml")


def statement(cfn: dict[str, Any], role: str, sid: str) -> dict[str, Any]:
    return next(s for s in statements(cfn["Resources"][role]["Properties"]) if s.get("Sid") == sid)


def variables(cfn: dict[str, Any], function: str) -> dict[str, Any]:
    return cfn["Resources"][function]["Properties"]["Environment"]["Variables"]


def drop_action(role: str, sid: str, action: str) -> Callable[[dict[str, Any]], None]:
    def change(cfn: dict[str, Any]) -> None:
        found = statement(cfn, role, sid)
        found["Action"] = [a for a in as_list(found["Action"]) if a != action]

    return change


def add_action(role: str, sid: str, action: str) -> Callable[[dict[str, Any]], None]:
    def change(cfn: dict[str, Any]) -> None:
        found = statement(cfn, role, sid)
        found["Action"] = [*as_list(found["Action"]), action]

    return change


def test_given_the_shipped_template_then_the_shop_gets_exactly_what_it_declares(shipped) -> None:
    # `make check` runs this: a change to the shop's RESOURCES or to template.yaml that leaves the
    # two apart fails here, each difference on its own line
    assert [str(f) for f in check_template(shipped, SHOP)] == []
    assert check_packaging(load_template(ROOT / "template.yaml"), ROOT, ["shop"]) == []


def _remove_table(cfn: dict[str, Any]) -> None:
    del cfn["Resources"]["ShopPaymentsTable"]


def _unset(function: str, variable: str) -> Callable[[dict[str, Any]], None]:
    return lambda cfn: variables(cfn, function).pop(variable)


def _misdirect(cfn: dict[str, Any]) -> None:
    variables(cfn, "AgentWorkerFunction")["SHOP_ORDERS_TABLE"] = {"Ref": "ShopMailTable"}


def _every_index(cfn: dict[str, Any]) -> None:
    statement(cfn, "AgentWorkerRole", "ShopOrdersByCustomer")["Resource"] = {
        "Fn::Sub": "${ShopOrdersTable.Arn}/index/*"
    }


def _drop_statement(role: str, sid: str) -> Callable[[dict[str, Any]], None]:
    def change(cfn: dict[str, Any]) -> None:
        for policy in cfn["Resources"][role]["Properties"]["Policies"]:
            document = policy["PolicyDocument"]
            document["Statement"] = [s for s in document["Statement"] if s.get("Sid") != sid]

    return change


CASES = [
    (
        "a-missing-table",
        _remove_table,
        "missing resource: ShopPaymentsTable (declared by workflow shop) is not in template.yaml; "
        "add it under Resources",
    ),
    (
        "a-missing-variable",
        _unset("ScheduledJobsFunction", "SHOP_MAIL_TABLE"),
        "missing variable: ScheduledJobsFunction does not set SHOP_MAIL_TABLE (workflow shop finds "
        "ShopMailTable through it); add `SHOP_MAIL_TABLE: !Ref ShopMailTable` to its Environment Variables",
    ),
    (
        "a-variable-naming-another-table",
        _misdirect,
        "wrong variable: AgentWorkerFunction sets SHOP_ORDERS_TABLE to !Ref ShopMailTable, not "
        "ShopOrdersTable (workflow shop); set it to `!Ref ShopOrdersTable`",
    ),
    (
        "a-missing-action",
        drop_action("AgentWorkerRole", "ShopPayments", "dynamodb:Scan"),
        "missing action: AgentWorkerRole does not allow dynamodb:Scan on ShopPaymentsTable (workflow shop, "
        "for the worker); add it to a statement on !GetAtt ShopPaymentsTable.Arn",
    ),
    (
        "a-missing-action-on-an-index",
        _drop_statement("AgentWorkerRole", "ShopMailBySender"),
        "missing action: AgentWorkerRole does not allow dynamodb:Query on ShopMailTable index/by-sender "
        "(workflow shop, for the worker); add it to a statement on "
        '!Sub "${ShopMailTable.Arn}/index/by-sender"',
    ),
    (
        "a-missing-action-for-the-jobs",
        _drop_statement("ScheduledJobsRole", "ReconcileShopOperations"),
        "missing action: ScheduledJobsRole does not allow dynamodb:GetItem on ShopPaymentsTable (workflow "
        "shop, for the scheduled jobs); add it to a statement on !GetAtt ShopPaymentsTable.Arn\n"
        "missing action: ScheduledJobsRole does not allow dynamodb:GetItem on ShopMailTable (workflow "
        "shop, for the scheduled jobs); add it to a statement on !GetAtt ShopMailTable.Arn",
    ),
    (
        "a-missing-sender-permission",
        _drop_statement("AgentWorkerRole", "ShopReplies"),
        "missing action: AgentWorkerRole does not allow ses:SendEmail on ShopFromAddress (workflow shop, for "
        "the worker); add it to a statement on the resource it names, with a Condition on "
        "!Ref ShopFromAddress",
    ),
    (
        "the-librarys-own-use",
        _drop_statement("ScheduledJobsRole", "EmailDigest"),
        "missing action: ScheduledJobsRole does not allow ses:SendEmail on ShopFromAddress (lockgate's "
        "approval digest, for the scheduled jobs); add it to a statement on the resource it names, with a "
        "Condition on !Ref ShopFromAddress",
    ),
    (
        "an-extra-action",
        add_action("AgentWorkerRole", "ShopMail", "dynamodb:DeleteItem"),
        "broader than declared: AgentWorkerRole allows dynamodb:DeleteItem on ShopMailTable, which no "
        "workflow declares for the worker; remove it from the role, or add it to worker= in workflow "
        "shop's RESOURCES",
    ),
    (
        "an-extra-action-for-the-jobs",
        add_action("ScheduledJobsRole", "ReconcileShopOperations", "dynamodb:PutItem"),
        "broader than declared: ScheduledJobsRole allows dynamodb:PutItem on ShopMailTable, which no "
        "workflow declares for the scheduled jobs; remove it from the role, or add it to jobs= in workflow "
        "shop's RESOURCES\n"
        "broader than declared: ScheduledJobsRole allows dynamodb:PutItem on ShopPaymentsTable, which no "
        "workflow declares for the scheduled jobs; remove it from the role, or add it to jobs= in workflow "
        "shop's RESOURCES",
    ),
    (
        "an-action-on-every-index",
        _every_index,
        "broader than declared: AgentWorkerRole allows dynamodb:Query on ShopOrdersTable index/*, which no "
        "workflow declares for the worker; remove it from the role, or add it to worker= in workflow "
        "shop's RESOURCES",
    ),
    (
        "a-wildcard-action",
        add_action("AgentWorkerRole", "ShopReplies", "ses:*"),
        "broader than declared: AgentWorkerRole allows ses:* on ShopFromAddress, which no workflow "
        "declares for the worker; remove it from the role, or add it to worker= in workflow shop's RESOURCES",
    ),
]


@pytest.mark.parametrize(("change", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_given_one_difference_then_the_check_names_exactly_it(shipped, change, expected: str) -> None:
    # Given the shipped template with one thing the shop declares broken
    cfn = copy.deepcopy(shipped)
    change(cfn)
    # Then the check reports that, in those words, and nothing else
    assert "\n".join(str(f) for f in check_template(cfn, SHOP)) == expected


def test_given_a_second_workflow_sharing_a_table_then_the_role_may_grant_what_either_declares(shipped):
    # Given a second workflow that also reads the shop's orders, and deletes from them
    triage = (Resource("ShopOrdersTable", variable="SHOP_ORDERS_TABLE", worker=("dynamodb:DeleteItem",)),)
    cfn = copy.deepcopy(shipped)
    add_action("AgentWorkerRole", "ShopOrders", "dynamodb:DeleteItem")(cfn)
    # Then an action one of them declares is not broader, and without it the line names that workflow
    assert check_template(cfn, {**SHOP, "triage": triage}) == []
    assert [str(f) for f in check_template(shipped, {**SHOP, "triage": triage})] == [
        "missing action: AgentWorkerRole does not allow dynamodb:DeleteItem on ShopOrdersTable (workflow "
        "triage, for the worker); add it to a statement on !GetAtt ShopOrdersTable.Arn"
    ]


def test_given_a_declared_index_wildcard_then_a_grant_on_one_index_is_within_it(shipped) -> None:
    orders = Resource(
        "ShopOrdersTable",
        variable="SHOP_ORDERS_TABLE",
        worker=("dynamodb:GetItem", "dynamodb:UpdateItem"),
        parts=(Part("index/*", worker=("dynamodb:Query",)),),
    )
    shop = {"shop": (orders, *SHOP["shop"][1:])}
    # The role's by-customer grant is one of every index: within; but the need for every index is not met
    assert [str(f) for f in check_template(shipped, shop)] == [
        "missing action: AgentWorkerRole does not allow dynamodb:Query on ShopOrdersTable index/* (workflow "
        'shop, for the worker); add it to a statement on !Sub "${ShopOrdersTable.Arn}/index/*"'
    ]


def test_given_a_package_a_function_does_not_ship_then_the_link_to_add_is_named(tmp_path: Path) -> None:
    # Given a checkout where the scheduled jobs' folder lacks the second workflow's link
    for function in ("agent_worker", "scheduled_jobs", "eval_jobs"):
        (tmp_path / "functions" / function).mkdir(parents=True)
        for package in ("shop", "triage"):
            if (function, package) != ("scheduled_jobs", "triage"):
                (tmp_path / "functions" / function / package).mkdir()
                (tmp_path / "functions" / function / package / "__init__.py").write_text("")
    findings = check_packaging(load_template(ROOT / "template.yaml"), tmp_path, ["shop", "triage"])
    assert [str(f) for f in findings] == [
        "not packaged: workflow triage is not in ScheduledJobsFunction's code (functions/scheduled_jobs/"
        "triage); link it from that folder: ln -s ../../workflows/triage functions/scheduled_jobs/triage"
    ]


# ------------------------------------------------------------------ the command


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    """A copy of the files `lockgate check` reads: the template, the config, the workflows, the functions."""
    for name in ("template.yaml", "lockgate.toml"):
        shutil.copy(ROOT / name, tmp_path / name)
    for name in ("workflows", "functions"):
        shutil.copytree(
            ROOT / name, tmp_path / name, symlinks=True, ignore=shutil.ignore_patterns("__pycache__")
        )
    return tmp_path


def packages_of(repository: Path, *packages: str) -> None:
    """Set lockgate.toml's [workflows] packages in the copy, its comments kept; without the tickets
    workflow, its MCP server's section goes too (as a user removing it would: `check` warns of it)."""
    config = repository / "lockgate.toml"
    document = tomlkit.parse(config.read_text(encoding="utf-8"))
    document["workflows"]["packages"] = list(packages)  # type: ignore[index]
    if "tickets" not in packages:
        del document["mcp"]
    config.write_text(tomlkit.dumps(document), encoding="utf-8")


def test_given_a_clean_copy_then_the_command_says_so_and_exits_0(repository: Path, capsys) -> None:
    packages_of(repository, "shop")
    code = cli.main(["check", "--template", str(repository / "template.yaml")])
    assert (code, capsys.readouterr().out) == (
        0,
        "ok: template.yaml gives each workflow (shop) its 4 declared resources\n",
    )


def _without_the_payments_table(text: str) -> str:
    start = text.index("  ShopPaymentsTable:\n")
    return text[:start] + text[text.index("  # Customers' emails", start) :]


def _without_the_jobs_mail_variable(text: str) -> str:
    line = "          SHOP_MAIL_TABLE: !Ref ShopMailTable\n"
    jobs = text.index("  ScheduledJobsFunction:")
    return text[:jobs] + text[jobs:].replace(line, "", 1)


def _without_the_scan(text: str) -> str:
    return text.replace(
        "                  - dynamodb:Scan # list_refunds: a day's refunds for the scheduled summary\n", ""
    )


def _with_a_delete(text: str) -> str:
    return text.replace(
        "                  - dynamodb:UpdateItem\n                Resource: !GetAtt ShopOrdersTable.Arn",
        "                  - dynamodb:UpdateItem\n                  - dynamodb:DeleteItem\n"
        "                Resource: !GetAtt ShopOrdersTable.Arn",
    )


TEMPLATE_EDITS = [
    (
        "a-missing-table",
        _without_the_payments_table,
        "missing resource: ShopPaymentsTable (declared by workflow shop) is not in template.yaml; "
        "add it under Resources",
    ),
    (
        "a-missing-variable",
        _without_the_jobs_mail_variable,
        "missing variable: ScheduledJobsFunction does not set SHOP_MAIL_TABLE (workflow shop finds "
        "ShopMailTable through it); add `SHOP_MAIL_TABLE: !Ref ShopMailTable` to its Environment Variables",
    ),
    (
        "a-missing-action",
        _without_the_scan,
        "missing action: AgentWorkerRole does not allow dynamodb:Scan on ShopPaymentsTable (workflow shop, "
        "for the worker); add it to a statement on !GetAtt ShopPaymentsTable.Arn",
    ),
    (
        "an-extra-action",
        _with_a_delete,
        "broader than declared: AgentWorkerRole allows dynamodb:DeleteItem on ShopOrdersTable, which no "
        "workflow declares for the worker; remove it from the role, or add it to worker= in workflow "
        "shop's RESOURCES",
    ),
]


@pytest.mark.parametrize(
    ("edit", "line"), [e[1:] for e in TEMPLATE_EDITS], ids=[e[0] for e in TEMPLATE_EDITS]
)
def test_given_an_edited_template_then_the_command_prints_the_finding_and_exits_1(
    repository: Path, capsys, edit: Callable[[str], str], line: str
) -> None:
    # Given a copy of the repository whose template.yaml lost (or gained) one thing the shop declares
    template = repository / "template.yaml"
    text = template.read_text(encoding="utf-8")
    assert edit(text) != text
    template.write_text(edit(text), encoding="utf-8")
    # When the check runs on that copy
    code = cli.main(["check", "--template", str(template)])
    # Then it prints that one finding and fails
    assert (code, capsys.readouterr().out) == (1, line + "\n")


def test_given_no_workflows_then_there_is_nothing_to_compare_and_the_command_says_so(
    repository: Path, capsys
) -> None:
    packages_of(repository)
    code = cli.main(["check", "--template", str(repository / "template.yaml")])
    assert (code, capsys.readouterr().out) == (
        0,
        "ok: lockgate.toml lists no workflows ([workflows] packages), so there is nothing to compare\n",
    )


def test_given_a_workflow_that_cannot_be_imported_then_the_command_says_which_and_exits_2(
    repository: Path, capsys
) -> None:
    packages_of(repository, "shop", "no_such_flow")
    code = cli.main(["check", "--template", str(repository / "template.yaml")])
    assert code == 2
    assert capsys.readouterr().err == (
        "lockgate: workflows package 'no_such_flow' cannot be imported: No module named 'no_such_flow'\n"
    )
