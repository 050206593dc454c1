"""The AWS resources a workflow says it uses, and what each function that runs its code may do there.

A workflows package lists them in a module-level ``RESOURCES``, next to its ``register(setup)``::

    from lockgate import Part, Resource

    RESOURCES = (
        Resource(
            "ShopOrdersTable",
            variable="SHOP_ORDERS_TABLE",
            worker=("dynamodb:GetItem", "dynamodb:UpdateItem"),
            parts=(Part("index/by-customer", worker=("dynamodb:Query",)),),
        ),
    )

They are plain data, read without AWS or an environment: every function that loads workflows
refuses to start while a declared variable is unset, and ``lockgate check`` compares them with
``template.yaml`` (the resource, its variable on each function, each action on each role).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

# An IAM action as a policy spells it: service prefix, colon, action name (wildcards allowed).
_ACTION = re.compile(r"^[a-z0-9-]+:[A-Za-z0-9*?]+$")
_LOGICAL_ID = re.compile(r"^[A-Za-z0-9]+$")  # CloudFormation's rule for logical ids
_VARIABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_PATH = re.compile(r"^[A-Za-z0-9._*?-]+(/[A-Za-z0-9._*?-]+)*$")

# The functions that run a workflow's code, by the field that lists their role's actions.
FUNCTIONS = ("worker", "jobs")


@dataclass(frozen=True)
class Part:
    """A part of a resource with an ARN of its own, such as a DynamoDB index, and the actions on it."""

    path: str
    """What follows the resource's ARN and a slash: ``index/by-customer`` (one index), ``index/*``."""

    worker: tuple[str, ...] = ()
    """IAM actions the agent worker's role needs on this part (tasks, tools, handlers, notices)."""

    jobs: tuple[str, ...] = ()
    """IAM actions the scheduled jobs' role needs on this part (tools' ``reconcile`` hooks)."""

    def __post_init__(self) -> None:
        if not _PATH.match(self.path):
            raise ValueError(f"Part {self.path!r}: a path looks like index/by-customer (no leading slash)")
        _actions(self, f"Part {self.path!r}")


@dataclass(frozen=True)
class Resource:
    """An AWS resource a workflow uses, as ``template.yaml`` defines it and the functions find it."""

    logical_id: str
    """Its logical id in ``template.yaml``: a resource (``ShopOrdersTable``) or a parameter
    (``ShopFromAddress``, the address SES sends from)."""

    variable: str
    """The environment variable your code reads its name (or value) from; every function that
    loads workflows must set it, usually to ``!Ref`` the logical id."""

    worker: tuple[str, ...] = ()
    """IAM actions the agent worker's role needs on it (tasks, tools, handlers, notices)."""

    jobs: tuple[str, ...] = ()
    """IAM actions the scheduled jobs' role needs on it (tools' ``reconcile`` hooks)."""

    parts: tuple[Part, ...] = ()
    """Its parts with ARNs of their own (indexes) and the actions on each."""

    def __post_init__(self) -> None:
        if not _LOGICAL_ID.match(self.logical_id):
            raise ValueError(f"Resource {self.logical_id!r}: a logical id is letters and digits only")
        if not _VARIABLE.match(self.variable):
            raise ValueError(
                f"Resource {self.logical_id}: {self.variable!r} is not an environment variable name"
            )
        _actions(self, f"Resource {self.logical_id}")
        object.__setattr__(self, "parts", tuple(self.parts))
        for part in self.parts:
            if not isinstance(part, Part):
                raise ValueError(f"Resource {self.logical_id}: parts holds {part!r}, not a Part(...)")

    def needs(self, function: str) -> Iterator[tuple[str, str]]:
        """Each (part path, action) the role of ``function`` ("worker" or "jobs") needs; "": the resource."""
        if function not in FUNCTIONS:
            raise ValueError(f"{function!r} runs no workflow code; the functions are {', '.join(FUNCTIONS)}")
        yield from (("", action) for action in getattr(self, function))
        for part in self.parts:
            yield from ((part.path, action) for action in getattr(part, function))

    def template_line(self) -> str:
        """The environment entry that gives a function this resource: ``NAME: !Ref LogicalId``."""
        return f"{self.variable}: !Ref {self.logical_id}"


def _actions(declared: Part | Resource, where: str) -> None:
    """Normalise the action fields to tuples, refusing anything that is not an IAM action."""
    for function in FUNCTIONS:
        value = getattr(declared, function)
        actions = (value,) if isinstance(value, str) else tuple(value)
        for action in actions:
            if not isinstance(action, str) or not _ACTION.match(action):
                raise ValueError(
                    f"{where}: {action!r} in {function}= is not an IAM action; write service:Action, "
                    "e.g. dynamodb:GetItem"
                )
        object.__setattr__(declared, function, actions)
