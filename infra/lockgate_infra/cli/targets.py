"""Where the operator CLI points: a running `lockgate local` stack or a deployed CloudFormation stack."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3


class TargetError(Exception):
    """The CLI cannot find the stack it was asked to operate on."""


@dataclass(frozen=True)
class Target:
    """AWS clients plus the physical names of the stack's resources, by logical id."""

    session: boto3.session.Session
    endpoint_url: str | None
    names: dict[str, str]
    label: str

    def client(self, service: str) -> Any:
        """A client for this target (moto's endpoint for a local stack)."""
        return self.session.client(service, endpoint_url=self.endpoint_url)  # type: ignore[call-overload]

    def name(self, logical_id: str) -> str:
        """The physical name or URL of a resource."""
        try:
            return self.names[logical_id]
        except KeyError:
            raise TargetError(f"{self.label} has no resource {logical_id}") from None


def local_target(root: Path) -> Target:
    """The stack `lockgate local` is running, from the state file it writes."""
    from lockgate_infra.local.run import read_local_state

    state = read_local_state(root)
    if state is None:
        raise TargetError("no local stack is running; start one with `lockgate local` (in another terminal)")
    session = boto3.session.Session(
        aws_access_key_id="local",
        aws_secret_access_key="local",  # noqa: S106 - moto's dummy credentials
        region_name=state.get("region", "us-east-1"),
    )
    return Target(session, state["endpoint_url"], dict(state["resources"]), "the local stack")


def deployed_target(stack_name: str, region: str | None = None) -> Target:
    """A deployed stack, from CloudFormation's resource list (uses your AWS credentials)."""
    session = boto3.session.Session(region_name=region)
    cfn = session.client("cloudformation")
    names: dict[str, str] = {}
    paginator = cfn.get_paginator("list_stack_resources")
    try:
        for page in paginator.paginate(StackName=stack_name):
            for resource in page["StackResourceSummaries"]:
                names[resource["LogicalResourceId"]] = resource["PhysicalResourceId"]
    except Exception as exc:  # noqa: BLE001 - report any failure as "cannot find the stack"
        raise TargetError(f"cannot read stack {stack_name!r}: {exc}") from exc
    return Target(session, None, names, f"stack {stack_name}")
