"""`make deploy STAGE=…` and `make destroy STAGE=…`: one samconfig.toml environment per stage.

The stage ``dev`` is samconfig.toml's ``[default]``; any other stage is the environment of its name.
Deploy builds and deploys it with ``sam``, adding ``PARAMS`` to the environment's parameter overrides
(``sam`` alone would replace them). Destroy says what it deletes and what it keeps, asks for the stack's
name to be typed in prod, then runs ``sam delete``. Errors are one line: ``lockgate: …``.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

ROOT = Path(__file__).resolve().parents[2]
# Stages whose destroy must be confirmed by typing the stack's name.
CONFIRMED_STAGES = frozenset({"prod"})
# What the template keeps on delete (DeletionPolicy: Retain): the data.
KEPT_TYPES = {"AWS::DynamoDB::Table": "table", "AWS::S3::Bucket": "bucket"}


class DeployError(Exception):
    """A stage cannot be deployed or destroyed as asked; the message says what to do."""


@dataclass(frozen=True)
class Stage:
    """A stage as samconfig.toml defines it."""

    name: str
    config_env: str
    stack: str
    region: str
    parameters: dict[str, str]

    @classmethod
    def load(cls, name: str, samconfig: Path) -> Stage:
        """The samconfig.toml environment of ``name`` (``dev`` is ``default``)."""
        try:
            config = tomllib.loads(samconfig.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise DeployError(f"cannot read {samconfig}: {exc}") from exc
        env = "default" if name == "dev" else name
        if env not in config:
            raise DeployError(f"no [{env}] environment in {samconfig.name}: add one for stage {name!r}")
        section: Mapping[str, Any] = config[env]
        common = section.get("global", {}).get("parameters", {})
        deploy = section.get("deploy", {}).get("parameters", {})
        parameters = _overrides(str(deploy.get("parameter_overrides", "")))
        if parameters.get("Stage", "dev") != name:
            raise DeployError(
                f"[{env}] in {samconfig.name} deploys Stage={parameters.get('Stage', 'dev')}, not {name}: "
                "fix its parameter_overrides"
            )
        if "stack_name" not in common:
            raise DeployError(f"[{env}.global.parameters] in {samconfig.name} has no stack_name")
        return cls(name, env, str(common["stack_name"]), str(common.get("region", "")), parameters)


def _overrides(text: str) -> dict[str, str]:
    """``"A=1 B='x y'"`` as {A: 1, B: x y}."""
    pairs = {}
    for word in shlex.split(text):
        key, sep, value = word.partition("=")
        if not sep or not key:
            raise DeployError(f"parameter override {word!r} is not NAME=VALUE")
        pairs[key] = value
    return pairs


Run = Callable[[list[str]], int]


def _run(command: list[str]) -> int:
    return subprocess.run(command, check=False).returncode  # noqa: S603 - sam with our own arguments


def deploy(stage: Stage, extra: str, run: Run = _run, sam: str = "sam") -> int:
    """``sam build`` then ``sam deploy`` of the stage's environment, with ``extra`` overrides added."""
    parameters = {**stage.parameters, **_overrides(extra)}
    if parameters.get("Stage", stage.name) != stage.name:
        raise DeployError(f"PARAMS may not change the Stage of {stage.name}")
    build = run([sam, "build", "--config-env", stage.config_env])
    if build != 0:
        return build
    overrides = [f"{key}={value}" for key, value in parameters.items()]
    return run([sam, "deploy", "--config-env", stage.config_env, "--parameter-overrides", *overrides])


def kept_resources(stage: Stage, cloudformation: Any) -> list[tuple[str, str]]:
    """(kind, physical name) of each resource of the deployed stack that a delete keeps."""
    try:
        pages = cloudformation.get_paginator("list_stack_resources").paginate(StackName=stage.stack)
        summaries = [s for page in pages for s in page["StackResourceSummaries"]]
    except Exception as exc:  # noqa: BLE001 - whatever failed, an unread stack is not deleted
        raise DeployError(
            f"cannot read stack {stage.stack} ({type(exc).__name__}): check the credentials and region"
        ) from exc
    return sorted(
        (KEPT_TYPES[s["ResourceType"]], s["PhysicalResourceId"])
        for s in summaries
        if s["ResourceType"] in KEPT_TYPES and s.get("PhysicalResourceId")
    )


def destroy(
    stage: Stage, cloudformation: Any, stdin: TextIO, out: TextIO, run: Run = _run, sam: str = "sam"
) -> int:
    """Say what goes and what stays, confirm in prod, then ``sam delete`` the stage's stack."""
    kept = kept_resources(stage, cloudformation)
    prefix = stage.parameters.get("SecretsPrefix") or stage.stack
    lines = [
        f"Deleting stack {stage.stack} (stage {stage.name}): its functions, API, queues and their messages,",
        "alarms, dashboard, log groups and the approval-link key (links already sent stop working).",
        "Kept (DeletionPolicy: Retain); delete them yourself once you no longer need the data:",
        *(f"  {kind} {name}" for kind, name in kept),
        f"  your secrets {prefix}/webhooks/*, {prefix}/anthropic-api-key, {prefix}/notify/*",
        "A later deploy of this stack starts with new, empty tables.",
    ]
    print("\n".join(lines), file=out)
    if stage.name in CONFIRMED_STAGES:
        print(f"Type the stack name ({stage.stack}) to delete it: ", end="", file=out, flush=True)
        if stdin.readline().strip() != stage.stack:
            print(f"\nlockgate: not confirmed: {stage.stack} was not deleted", file=sys.stderr)
            return 1
    return run([sam, "delete", "--config-env", stage.config_env, "--no-prompts"])


def _cloudformation(stage: Stage) -> Any:
    import boto3  # only destroy needs it

    return boto3.session.Session(region_name=stage.region or None).client("cloudformation")


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m lockgate_infra.deploy deploy|destroy --stage NAME [--parameters 'K=V ...']``."""
    parser = argparse.ArgumentParser(prog="lockgate_infra.deploy", description=__doc__)
    parser.add_argument("action", choices=["deploy", "destroy"])
    parser.add_argument("--stage", required=True, help="dev is samconfig.toml's [default]")
    parser.add_argument("--parameters", default="", help="extra parameter overrides, 'K=V K=V'")
    parser.add_argument("--samconfig", type=Path, default=ROOT / "samconfig.toml")
    parser.add_argument("--sam", default="sam", help="the sam executable")
    args = parser.parse_args(argv)
    try:
        stage = Stage.load(args.stage, args.samconfig)
        if args.action == "deploy":
            return deploy(stage, args.parameters, sam=args.sam)
        return destroy(stage, _cloudformation(stage), sys.stdin, sys.stdout, sam=args.sam)
    except DeployError as exc:
        print(f"lockgate: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
