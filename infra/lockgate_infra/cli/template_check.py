"""What the workflows declare (``RESOURCES``) against what ``template.yaml`` gives them: ``lockgate check``.

Read from the template as samtranslator translates it (``lockgate_infra.cli.iam``), for each
function that runs workflow code:

- every declared resource is defined (under Resources, or Parameters for a value such as an address);
- the function sets the declared variable, to that resource (``!Ref``, ``!GetAtt`` or a ``!Sub``);
- its role allows each declared action on the resource, or on the part (index) declared;
- and nothing more: an action the role allows on a declared resource that no workflow declares
  for that function is reported as broader than declared.

A statement is on a resource when its ``Resource`` names it (``!GetAtt X.Arn``, ``!Ref X``,
``!Sub "${X.Arn}/index/by-customer"``), or, when its ``Resource`` names none of them, when its
``Condition`` does (SES: ``identity/*`` with ``ses:FromAddress: !Ref ShopFromAddress``).
Statements on resources no workflow declares are the library's own; the template tests keep those.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lockgate.declared import Resource
from lockgate_infra.cli.iam import as_list, role_of, statements

# The functions that run a workflow's code, by the declaration field listing their role's actions.
FUNCTIONS = {"worker": "AgentWorkerFunction", "jobs": "ScheduledJobsFunction"}
FOR = {"worker": "the worker", "jobs": "the scheduled jobs"}
# What the library itself does with a workflow's resource, found by the variable it reads: the
# approval digest (a built-in job) emails reviewers from the address in SHOP_FROM_ADDRESS.
BUILT_IN: Mapping[str, Mapping[str, tuple[str, ...]]] = {"jobs": {"SHOP_FROM_ADDRESS": ("ses:SendEmail",)}}
BUILT_IN_NAME = "lockgate's approval digest"
# The functions that import the workflows packages (the eval job registers them in its sandbox),
# so each must ship every package in its code folder, as a link into workflows/.
PACKAGED_WITH = ("AgentWorkerFunction", "ScheduledJobsFunction", "EvalJobsFunction")
KINDS = (
    "missing resource",
    "missing variable",
    "wrong variable",
    "missing action",
    "broader than declared",
    "not packaged",
)
_SUB = re.compile(r"^\$\{([A-Za-z0-9]+)(?:\.Arn)?\}(?:/(.+))?$")
_SUB_NAMES = re.compile(r"\$\{([A-Za-z0-9]+)[.}]")


@dataclass(frozen=True)
class Finding:
    """One difference between the declarations and the template, as one line."""

    kind: str  # one of KINDS
    text: str  # what is missing or broader, where, and what to change

    def __str__(self) -> str:
        return f"{self.kind}: {self.text}"


@dataclass(frozen=True)
class Need:
    """One action a function's role needs on a resource (or one of its parts), and who needs it."""

    logical_id: str
    part: str  # "" the resource itself, else the part's path (index/by-customer)
    action: str
    by: str  # "workflow shop", or the library's own job


def check_template(cfn: Mapping[str, Any], declared: Mapping[str, Sequence[Resource]]) -> list[Finding]:
    """Every finding for ``declared`` (workflow → its resources) in a translated template, in order."""
    findings = [*_undefined(cfn, declared)]
    for function, function_id in FUNCTIONS.items():
        if function_id not in cfn["Resources"]:
            raise ValueError(f"template.yaml has no {function_id}: the workflows' {function} code runs there")
        findings += _variables(cfn, function_id, declared)
        findings += _actions(cfn, function, function_id, declared)
    return sorted(findings, key=lambda f: KINDS.index(f.kind))


def check_packaging(sam_template: Mapping[str, Any], base: Path, packages: Sequence[str]) -> list[Finding]:
    """A finding for each workflows package missing from the code folder of a function that imports it."""
    findings = []
    for function_id in PACKAGED_WITH:
        code = sam_template["Resources"].get(function_id, {}).get("Properties", {}).get("CodeUri")
        if not isinstance(code, str):
            continue
        folder = code.rstrip("/")
        for package in packages:
            if not (base / folder / package / "__init__.py").is_file():
                findings.append(
                    Finding(
                        "not packaged",
                        f"workflow {package} is not in {function_id}'s code ({folder}/{package}); link it "
                        f"from that folder: ln -s ../../workflows/{package} {folder}/{package}",
                    )
                )
    return findings


def _undefined(cfn: Mapping[str, Any], declared: Mapping[str, Sequence[Resource]]) -> Iterator[Finding]:
    defined = set(cfn["Resources"]) | set(cfn.get("Parameters", {}))
    for workflow, resources in declared.items():
        for resource in resources:
            if resource.logical_id not in defined:
                yield Finding(
                    "missing resource",
                    f"{resource.logical_id} (declared by workflow {workflow}) is not in template.yaml; "
                    "add it under Resources",
                )


def _variables(
    cfn: Mapping[str, Any], function_id: str, declared: Mapping[str, Sequence[Resource]]
) -> Iterator[Finding]:
    variables = cfn["Resources"][function_id]["Properties"].get("Environment", {}).get("Variables", {})
    for workflow, resources in declared.items():
        for resource in resources:
            value = variables.get(resource.variable)
            if value is None:
                yield Finding(
                    "missing variable",
                    f"{function_id} does not set {resource.variable} (workflow {workflow} finds "
                    f"{resource.logical_id} through it); add `{resource.template_line()}` to its "
                    "Environment Variables",
                )
            elif resource.logical_id not in _names_in(value):
                yield Finding(
                    "wrong variable",
                    f"{function_id} sets {resource.variable} to {_spelled(value)}, not "
                    f"{resource.logical_id} (workflow {workflow}); set it to `!Ref {resource.logical_id}`",
                )


def _actions(
    cfn: Mapping[str, Any], function: str, function_id: str, declared: Mapping[str, Sequence[Resource]]
) -> Iterator[Finding]:
    needs = list(_needs(function, declared))
    ids = {r.logical_id for resources in declared.values() for r in resources}
    role = role_of(cfn, function_id)  # ValueError unless the function runs as a role of the template
    role_id = cfn["Resources"][function_id]["Properties"]["Role"]["Fn::GetAtt"][0]
    grants = sorted(set(_grants(role, ids)))
    for need in needs:
        if not any(_covers(grant, (need.logical_id, need.part, need.action)) for grant in grants):
            on = _statement_on(cfn, need.logical_id, need.part)
            yield Finding(
                "missing action",
                f"{role_id} does not allow {need.action} on {_where(need.logical_id, need.part)} ({need.by}, "
                f"for {FOR[function]}); add it to a statement on {on}",
            )
    for logical_id, part, action in grants:
        if not any(_covers((n.logical_id, n.part, n.action), (logical_id, part, action)) for n in needs):
            owners = " and ".join(
                f"workflow {w}"
                for w, resources in declared.items()
                if any(r.logical_id == logical_id for r in resources)
            )
            yield Finding(
                "broader than declared",
                f"{role_id} allows {action} on {_where(logical_id, part)}, which no workflow declares for "
                f"{FOR[function]}; remove it from the role, or add it to {function}= in {owners}'s RESOURCES",
            )


def _needs(function: str, declared: Mapping[str, Sequence[Resource]]) -> Iterator[Need]:
    for workflow, resources in declared.items():
        for resource in resources:
            for part, action in resource.needs(function):
                yield Need(resource.logical_id, part, action, f"workflow {workflow}")
            for action in BUILT_IN.get(function, {}).get(resource.variable, ()):
                yield Need(resource.logical_id, "", action, BUILT_IN_NAME)


def statement_on(statement: Mapping[str, Any], ids: set[str]) -> list[tuple[str, str]]:
    """The (logical id, part) of each resource among ``ids`` a policy statement is on; [] for none."""
    on = [found for r in as_list(statement.get("Resource", [])) if (found := _arn_of(r)) and found[0] in ids]
    if not on:  # scoped by its condition only (SES's from address)
        on = [(name, "") for name in sorted(_names_in(statement.get("Condition", {})) & ids)]
    return on


def _grants(role: Mapping[str, Any], ids: set[str]) -> Iterator[tuple[str, str, str]]:
    """(logical id, part, action) for each action a role allows on a declared resource."""
    for statement in statements(role):
        if statement.get("Effect") != "Allow" or "Action" not in statement:
            continue
        for logical_id, part in statement_on(statement, ids):
            for action in as_list(statement["Action"]):
                yield logical_id, part, action


def _arn_of(resource: Any) -> tuple[str, str] | None:
    """The (logical id, part) an ARN in a policy names, or None when it names no resource."""
    if not isinstance(resource, dict) or len(resource) != 1:
        return None
    ((key, arg),) = resource.items()
    if key == "Ref" and isinstance(arg, str):
        return arg, ""
    if key == "Fn::GetAtt" and isinstance(arg, list) and len(arg) == 2:
        return arg[0], "" if arg[1] == "Arn" else arg[1]
    if key == "Fn::Sub":
        found = _SUB.match(arg if isinstance(arg, str) else arg[0])
        if found:
            return found.group(1), found.group(2) or ""
    return None


def _names_in(value: Any) -> set[str]:
    """Every logical id an intrinsic (Ref, GetAtt, Sub) anywhere in ``value`` names."""
    if isinstance(value, list):
        return set().union(*map(_names_in, value)) if value else set()
    if not isinstance(value, dict):
        return set()
    names: set[str] = set()
    for key, arg in value.items():
        if key == "Ref" and isinstance(arg, str):
            names.add(arg)
        elif key == "Fn::GetAtt" and isinstance(arg, list) and arg:
            names.add(str(arg[0]))
        elif key == "Fn::Sub":
            names |= set(_SUB_NAMES.findall(arg if isinstance(arg, str) else arg[0]))
            names |= _names_in(arg[1:] if isinstance(arg, list) else [])
        else:
            names |= _names_in(arg)
    return names


def _covers(wider: tuple[str, str, str], narrower: tuple[str, str, str]) -> bool:
    """Whether a grant or need ``wider`` (IAM wildcards in part and action) includes ``narrower``."""
    return (
        wider[0] == narrower[0]
        and fnmatch.fnmatchcase(narrower[1], wider[1])
        and fnmatch.fnmatchcase(narrower[2], wider[2])
    )


def _where(logical_id: str, part: str) -> str:
    return f"{logical_id} {part}" if part else logical_id


def _statement_on(cfn: Mapping[str, Any], logical_id: str, part: str) -> str:
    """How the template spells what a statement for this need is on."""
    if logical_id in cfn.get("Parameters", {}):
        return f"the resource it names, with a Condition on !Ref {logical_id}"
    return f'!Sub "${{{logical_id}.Arn}}/{part}"' if part else f"!GetAtt {logical_id}.Arn"


def _spelled(value: Any) -> str:
    """A variable's value as the template spells it (short form)."""
    if isinstance(value, dict) and len(value) == 1:
        ((key, arg),) = value.items()
        if key == "Ref":
            return f"!Ref {arg}"
        if key == "Fn::GetAtt":
            return f"!GetAtt {'.'.join(map(str, arg))}"
        if key == "Fn::Sub":
            return f"!Sub {arg if isinstance(arg, str) else arg[0]!r}"
    return repr(value)
