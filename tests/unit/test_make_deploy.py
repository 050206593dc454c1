"""`make deploy STAGE=…` and `make destroy STAGE=…`, run for real with a recording stand-in for sam.

The stand-in writes its arguments to a file, so each test sees exactly what sam would have been asked
to do; destroy reads the deployed stack from moto's CloudFormation (a stack with a table, a bucket
and a queue), the way it reads a real one.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from lockgate_infra.deploy import main as deploy_main
from lockgate_infra.local.moto_server import MotoServer

ROOT = Path(__file__).resolve().parents[2]
STACK_TEMPLATE = {
    "Resources": {
        "InboxTable": {
            "Type": "AWS::DynamoDB::Table",
            "DeletionPolicy": "Retain",
            "Properties": {
                "BillingMode": "PAY_PER_REQUEST",
                "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
                "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
            },
        },
        "BodyBucket": {"Type": "AWS::S3::Bucket", "DeletionPolicy": "Retain"},
        "InboxQueue": {"Type": "AWS::SQS::Queue"},
    }
}


@pytest.fixture(scope="module")
def moto_server() -> Iterator[MotoServer]:
    server = MotoServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def moto(moto_server: MotoServer) -> str:
    """An empty account for each test."""
    moto_server.reset()
    return moto_server.endpoint_url


def recording_sam(folder: Path, exit_code: int = 0) -> tuple[Path, Path]:
    """A `sam` that records each call's arguments (one JSON list per line) and exits with ``exit_code``."""
    calls, sam = folder / "calls.jsonl", folder / "sam"
    record = f"open({str(calls)!r}, 'a').write(json.dumps(sys.argv[1:]) + '\\n')"
    sam.write_text(
        f"#!/usr/bin/env python3\nimport json, sys\n{record}\nsys.exit({exit_code})\n", encoding="utf-8"
    )
    sam.chmod(0o755)
    return sam, calls


@pytest.fixture
def fake_sam(tmp_path: Path) -> tuple[Path, Path]:
    """A `sam` that records its calls and succeeds."""
    return recording_sam(tmp_path)


def make(
    target: str, sam: Path, endpoint: str, stdin: str = "", **variables: str
) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
    }
    assignments = [f"{k}={v}" for k, v in {"SAM": str(sam), **variables}.items()]
    return subprocess.run(  # noqa: S603 - make with fixed arguments
        ["make", "-s", "--no-print-directory", target, *assignments],  # noqa: S607
        cwd=ROOT, env=env, input=stdin, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def main_in_process(
    target: str, sam: Path, endpoint: str, stdin: str = "", **variables: str
) -> subprocess.CompletedProcess[str]:
    """What the make target runs, called in this process (so coverage sees it)."""
    argv = [target, "--stage", variables.get("STAGE", "dev"), "--sam", str(sam)]
    argv += ["--parameters", variables["PARAMS"]] if "PARAMS" in variables else []
    argv += ["--samconfig", variables["SAMCONFIG"]] if "SAMCONFIG" in variables else []
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AWS_ENDPOINT_URL", endpoint)
        patch.setenv("AWS_ACCESS_KEY_ID", "testing")
        patch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
        patch.setattr(sys, "stdin", io.StringIO(stdin))
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = deploy_main(argv)
    return subprocess.CompletedProcess(argv, code, out.getvalue(), err.getvalue())


@pytest.fixture(params=["make", "in-process"])
def run(request: pytest.FixtureRequest) -> Any:
    """Each case both through make and in this process."""
    return make if request.param == "make" else main_in_process


def calls_of(calls: Path) -> list[list[str]]:
    return (
        [json.loads(line) for line in calls.read_text(encoding="utf-8").splitlines()]
        if calls.exists()
        else []
    )


def deployed_stack(endpoint: str, name: str) -> dict[str, str]:
    """Create ``name`` in moto's CloudFormation; logical id → physical id."""
    cfn: Any = boto3.client(
        "cloudformation", region_name="us-east-1", endpoint_url=endpoint,
        aws_access_key_id="testing", aws_secret_access_key="testing",
    )  # fmt: skip
    cfn.create_stack(StackName=name, TemplateBody=json.dumps(STACK_TEMPLATE))
    summaries = cfn.list_stack_resources(StackName=name)["StackResourceSummaries"]
    return {s["LogicalResourceId"]: s["PhysicalResourceId"] for s in summaries}


def test_given_deploy_of_prod_with_params_then_sam_builds_and_deploys_prods_environment_with_both(
    fake_sam, moto
):
    sam, calls = fake_sam
    result = make("deploy", sam, moto, STAGE="prod", PARAMS="AlertEmail=ops@shop.example.com")
    assert result.returncode == 0, result.stderr
    # samconfig.toml's [prod] overrides are kept: sam alone would replace them with PARAMS.
    assert calls_of(calls) == [
        ["build", "--config-env", "prod"],
        ["deploy", "--config-env", "prod", "--parameter-overrides",
         "Stage=prod", "LogRetentionDays=90", "AlertEmail=ops@shop.example.com"],
    ]  # fmt: skip


def test_given_deploy_of_dev_then_it_is_samconfigs_default_environment(fake_sam, moto):
    sam, calls = fake_sam
    assert make("deploy", sam, moto).returncode == 0
    assert calls_of(calls)[-1] == ["deploy", "--config-env", "default", "--parameter-overrides", "Stage=dev"]


@pytest.mark.parametrize(
    ("variables", "message"),
    [
        ({"STAGE": "staging"}, "no [staging] environment in samconfig.toml"),
        ({"STAGE": "prod", "PARAMS": "Stage=dev"}, "PARAMS may not change the Stage of prod"),
        ({"STAGE": "dev", "PARAMS": "oops"}, "parameter override 'oops' is not NAME=VALUE"),
        ({"SAMCONFIG": "/nope/samconfig.toml"}, "cannot read /nope/samconfig.toml"),
    ],
)
def test_given_a_stage_or_params_that_do_not_fit_then_nothing_runs_and_one_line_says_why(
    fake_sam, moto, run, variables, message
):
    sam, calls = fake_sam
    result = run("deploy", sam, moto, **variables)
    assert result.returncode != 0 and calls_of(calls) == []
    assert f"lockgate: {message}" in result.stderr and "Traceback" not in result.stderr


def test_given_destroy_of_prod_without_the_typed_name_then_nothing_is_deleted(fake_sam, moto, run):
    sam, calls = fake_sam
    deployed_stack(moto, "lockgate-prod")
    for typed in ("", "yes\n", "lockgate\n"):
        result = run("destroy", sam, moto, stdin=typed, STAGE="prod")
        assert result.returncode != 0 and calls_of(calls) == []
        assert "lockgate: not confirmed: lockgate-prod was not deleted" in result.stderr


def test_given_destroy_of_prod_with_the_typed_name_then_sam_deletes_it(fake_sam, moto, run):
    sam, calls = fake_sam
    physical = deployed_stack(moto, "lockgate-prod")
    result = run("destroy", sam, moto, stdin="lockgate-prod\n", STAGE="prod")
    assert result.returncode == 0, result.stderr
    assert calls_of(calls) == [["delete", "--config-env", "prod", "--no-prompts"]]
    assert "Type the stack name (lockgate-prod)" in result.stdout
    assert f"table {physical['InboxTable']}" in result.stdout


def test_given_destroy_of_dev_then_it_needs_no_typing_and_says_what_it_keeps(fake_sam, moto, run):
    sam, calls = fake_sam
    physical = deployed_stack(moto, "lockgate")
    result = run("destroy", sam, moto, stdin="", STAGE="dev")
    assert result.returncode == 0, result.stderr
    assert calls_of(calls) == [["delete", "--config-env", "default", "--no-prompts"]]
    kept = result.stdout[result.stdout.index("Kept") :]
    assert f"table {physical['InboxTable']}" in kept and f"bucket {physical['BodyBucket']}" in kept
    assert physical["InboxQueue"] not in kept  # queues go with the stack
    assert "your secrets lockgate/webhooks/*, lockgate/anthropic-api-key, lockgate/notify/*" in kept


def test_given_destroy_of_a_stack_that_cannot_be_read_then_nothing_is_deleted(fake_sam, moto, run):
    sam, calls = fake_sam
    result = run("destroy", sam, moto, stdin="lockgate-prod\n", STAGE="prod")  # not in this account
    assert result.returncode != 0 and calls_of(calls) == []
    assert "lockgate: cannot read stack lockgate-prod (ClientError)" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("samconfig", "message"),
    [
        ('[prod.global.parameters]\nstack_name = "x"\n'
         '[prod.deploy.parameters]\nparameter_overrides = "Stage=dev"\n',
         "[prod] in samconfig.toml deploys Stage=dev, not prod: fix its parameter_overrides"),
        ('[prod.deploy.parameters]\nparameter_overrides = "Stage=prod"\n',
         "[prod.global.parameters] in samconfig.toml has no stack_name"),
    ],
)  # fmt: skip
def test_given_a_samconfig_that_does_not_fit_the_stage_then_nothing_runs(
    fake_sam, moto, tmp_path, samconfig, message
):
    sam, calls = fake_sam
    (tmp_path / "samconfig.toml").write_text(samconfig, encoding="utf-8")
    result = main_in_process("deploy", sam, moto, STAGE="prod", SAMCONFIG=str(tmp_path / "samconfig.toml"))
    assert result.returncode == 2 and calls_of(calls) == []
    assert result.stderr == f"lockgate: {message}\n"


def test_given_the_build_fails_then_nothing_is_deployed(tmp_path, moto):
    sam, calls = recording_sam(tmp_path, exit_code=3)
    assert main_in_process("deploy", sam, moto).returncode == 3
    assert calls_of(calls) == [["build", "--config-env", "default"]]


def test_given_the_readmes_custom_domain_deploy_then_both_parameters_reach_sam_after_prods_own(
    fake_sam, moto
):
    sam, calls = fake_sam
    certificate = "arn:aws:acm:us-east-1:123456789012:certificate/..."
    params = f"DomainName=hooks.shop.example.com CertificateArn={certificate}"
    assert make("deploy", sam, moto, STAGE="prod", PARAMS=params).returncode == 0
    assert calls_of(calls)[-1][3:] == [
        "--parameter-overrides", "Stage=prod", "LogRetentionDays=90",
        "DomainName=hooks.shop.example.com", f"CertificateArn={certificate}",
    ]  # fmt: skip
