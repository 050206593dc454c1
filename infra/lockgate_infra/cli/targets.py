"""Where the operator CLI points: a running `lockgate local` stack or a deployed CloudFormation stack."""

from __future__ import annotations

import argparse
import logging
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError, ProfileNotFound

from lockgate.approvals.checking import WorkerVersionChecks
from lockgate.config import LockgateConfig
from lockgate_infra.failures import LOCAL, CommandError

WORKER, WORKER_ALIAS = "AgentWorkerFunction", "AgentWorkerFunctionAliaslive"  # template logical ids
_CHECKS_LOG = logging.getLogger("lockgate.cli.checks")  # an unanswered check: the error says it in one line
_CHECKS_LOG.addHandler(logging.NullHandler())
_CHECKS_LOG.propagate = False


class TargetError(CommandError):
    """The CLI cannot find the stack it was asked to operate on."""


@dataclass(frozen=True)
class Target:
    """AWS clients plus the physical names of the stack's resources, by logical id."""

    session: boto3.session.Session
    endpoint_url: str | None
    names: dict[str, str]
    label: str
    state: Mapping[str, Any] | None = None  # a local stack's state file (its functions' environments)
    stage: str | None = None  # a deployed stack's Stage parameter: stages/<stage>.toml applies to it

    def client(self, service: str, config: Config | None = None) -> Any:
        """A client for this target (moto's endpoint for a local stack; Lambda: its local Invoke API)."""
        endpoint = self.endpoint_url
        if service == "lambda" and self.state and self.state.get("lambda_url"):
            endpoint = str(self.state["lambda_url"])
        return self.session.client(service, endpoint_url=endpoint, config=config)  # type: ignore[call-overload]

    def name(self, logical_id: str) -> str:
        """The physical name or URL of a resource."""
        try:
            return self.names[logical_id]
        except KeyError:
            raise TargetError(f"{self.label} has no resource {logical_id}") from None


def add_target_options(parser: argparse.ArgumentParser) -> None:
    """``--local`` (the default) or ``--stack NAME``, with ``--region`` and ``--profile`` for a stack."""
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--local", action="store_true", help="the running `lockgate local` (default)")
    where.add_argument("--stack", metavar="NAME", help="a deployed CloudFormation stack")
    parser.add_argument(
        "--region", help="AWS region of --stack (default: AWS_REGION, your profile's, then samconfig.toml's)"
    )
    parser.add_argument(
        "--profile", help="AWS profile for --stack (default: AWS_PROFILE or the default chain)"
    )
    parser.add_argument(
        "--local-port",
        type=int,
        metavar="PORT",
        help="which `lockgate local`, when several run in this checkout: its gateway port "
        "(default: LOCKGATE_LOCAL_PORT)",
    )


def local_target(root: Path, port: int | None = None) -> Target:
    """The stack `lockgate local` is running (the one on ``port``), from the state file it writes."""
    from lockgate_infra.local.run import LocalStackChoice, read_local_state

    try:
        state = read_local_state(root, port)
    except LocalStackChoice as exc:
        raise TargetError(str(exc)) from None
    if state is None:
        where = f" on port {port}" if port else ""
        raise TargetError(
            f"no local stack is running{where}; start one with `lockgate local` (in another terminal)"
        )
    session = boto3.session.Session(
        aws_access_key_id="local",
        aws_secret_access_key="local",  # noqa: S106 - moto's dummy credentials
        region_name=state.get("region", "us-east-1"),
    )
    return Target(session, state["endpoint_url"], dict(state["resources"]), LOCAL, state)


def deployed_target(
    stack_name: str,
    region: str | None = None,
    profile: str | None = None,
    samconfig: Path | None = None,
    environ: Mapping[str, str] = os.environ,
) -> Target:
    """A deployed stack, from CloudFormation's resource list (uses your AWS credentials).

    The region is ``region``, else the AWS environment's (AWS_REGION, AWS_DEFAULT_REGION, the
    profile's), else the one ``samconfig`` gives this stack name.
    """
    try:
        session = boto3.session.Session(profile_name=profile)
    except ProfileNotFound:
        raise TargetError(f"no AWS profile {profile!r}: check --profile or AWS_PROFILE") from None
    # boto3 reads AWS_DEFAULT_REGION but not AWS_REGION, which the AWS CLI and the other SDKs prefer.
    region = region or environ.get("AWS_REGION") or session.region_name
    region = region or (samconfig_region(samconfig, stack_name) if samconfig else None)
    if not region:
        raise TargetError(
            f"no AWS region for stack {stack_name}: pass --region, set AWS_REGION, "
            "or set region in samconfig.toml"
        )
    session = boto3.session.Session(profile_name=profile, region_name=region)
    cfn = session.client("cloudformation")
    names: dict[str, str] = {}
    try:
        for page in cfn.get_paginator("list_stack_resources").paginate(StackName=stack_name):
            for resource in page["StackResourceSummaries"]:
                names[resource["LogicalResourceId"]] = resource["PhysicalResourceId"]
    except ClientError as exc:
        # CloudFormation answers a missing stack with the generic ValidationError code.
        if exc.response.get("Error", {}).get("Code") != "ValidationError":
            raise
        raise TargetError(
            f"no stack {stack_name!r} in {region}: check --stack and --region "
            "(`aws cloudformation list-stacks` lists them)"
        ) from None
    return Target(session, None, names, f"stack {stack_name}", stage=_stage(cfn, stack_name))


def _stage(cfn: Any, stack_name: str) -> str | None:
    """The stack's ``Stage`` parameter (None for a stack without one)."""
    stacks = cfn.describe_stacks(StackName=stack_name).get("Stacks", [])
    parameters = stacks[0].get("Parameters", []) if stacks else []
    return next((p["ParameterValue"] for p in parameters if p["ParameterKey"] == "Stage"), None) or None


def stack_config(target: Target, root: Path, path: Path | None = None) -> LockgateConfig:
    """The config the target runs: ``path``, else the local stack's, else the checkout's lockgate.toml,
    with the deployed stack's stage overlay (``stages/<Stage>.toml``) merged over it."""
    from lockgate.config import load_config

    chosen = path or Path((target.state or {}).get("config") or root / "lockgate.toml")
    return load_config(chosen, target.stage)


def samconfig_region(path: Path, stack_name: str) -> str | None:
    """The region samconfig.toml deploys ``stack_name`` to: the environment naming it, else [default]'s."""
    try:
        config = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except tomllib.TOMLDecodeError as exc:
        raise TargetError(f"{path} is not valid TOML ({exc}); fix it or pass --region") from None
    default = None
    for env, commands in config.items():
        if not isinstance(commands, dict):
            continue  # e.g. version = 0.1
        for command in ("global", "deploy"):
            section = commands.get(command)
            parameters = section.get("parameters") if isinstance(section, dict) else None
            if not isinstance(parameters, dict) or not parameters.get("region"):
                continue
            if parameters.get("stack_name") == stack_name:
                return str(parameters["region"])
            if env == "default" and default is None:
                default = str(parameters["region"])
    return default


def worker_checks(target: Target) -> WorkerVersionChecks:
    """The stack's worker, asked whether an edited version would run (as the approval page asks it)."""
    worker = target.names.get(WORKER_ALIAS) or target.name(WORKER)
    # A cold worker may take seconds to answer: wait, and ask again once (the check changes nothing).
    config = Config(read_timeout=30, retries={"mode": "standard", "total_max_attempts": 2})
    return WorkerVersionChecks(target.client("lambda", config), worker, _CHECKS_LOG)
