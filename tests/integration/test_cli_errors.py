"""`lockgate` under bad input: every command exits 1 or 2 with one `lockgate: ` line, never a traceback.

The walk below reads the argparse tree, so a command added later is covered without editing this file.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from lockgate_infra.cli import main as cli
from lockgate_infra.cli.targets import samconfig_region
from lockgate_infra.local.fidelity import embedded_aws
from tests.unit.test_cli_help import commands

# With no arguments these serve or measure for a while (other tests run them); bad input is still tried.
LONG_RUNNING = {("local",), ("demo",), ("cost",)}


@pytest.fixture
def no_aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No AWS region, credentials or profile anywhere, no local stack, and an empty working folder."""
    for name in list(os.environ):
        if name.startswith(("AWS_", "ANTHROPIC_", "LOCKGATE_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # never ask the instance metadata service
    # Another test's `lockgate local` may be running in this checkout: this test must not see it.
    monkeypatch.setattr("lockgate_infra.local.run.read_local_state", lambda *args, **kwargs: None)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, bool]:
    """(exit code, stderr, whether argparse refused the arguments) of ``lockgate ARGV`` in-process."""
    try:
        code, by_argparse = cli.main(argv), False
    except SystemExit as exited:
        code, by_argparse = int(exited.code or 0), True
    return code, capsys.readouterr().err, by_argparse


def leaves() -> list[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every runnable command (one without sub-commands, or that runs when given none) and its parser."""
    found = []
    for path in commands(cli._parser()):  # noqa: SLF001 - the tree is the point
        parser = cli._parser()  # noqa: SLF001
        for word in path:
            parser = _subparsers(parser).choices[word]
        if path and (not _has_subparsers(parser) or parser.get_default("run") is not None):
            found.append((path, parser))
    return found


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction:  # type: ignore[type-arg]
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))  # noqa: SLF001


def _has_subparsers(parser: argparse.ArgumentParser) -> bool:
    return any(isinstance(a, argparse._SubParsersAction) for a in parser._actions)  # noqa: SLF001


def bad_inputs(path: tuple[str, ...], parser: argparse.ArgumentParser) -> Iterator[list[str]]:
    """No arguments, an unknown flag, garbage for each typed option, a missing stack, no local stack."""
    actions = parser._actions  # noqa: SLF001
    positionals = [
        "x" for a in actions if not a.option_strings and not isinstance(a, argparse._SubParsersAction)
    ]
    flags = {flag for a in actions for flag in a.option_strings}
    if path not in LONG_RUNNING:
        yield [*path]
    yield [*path, *positionals, "--no-such-flag"]
    for action in actions:
        if action.option_strings and (action.type is not None or action.choices is not None):
            yield [*path, *positionals, action.option_strings[-1], "garbage%"]
    if "--stack" in flags:
        yield [*path, *positionals, "--stack", "nope"]
        yield [*path, *positionals, "--stack", "nope", "--region", "garbage%"]
    if "--local" in flags:
        yield [*path, *positionals, "--local"]


CASES = [argv for path, parser in leaves() for argv in bad_inputs(path, parser)]


def test_the_walk_reaches_every_leaf_command() -> None:
    paths = {path for path, _ in leaves()}
    assert {
        ("spend",),
        ("local",),
        ("local", "status"),
        ("local", "slack", "click"),
        ("iam-report",),
        ("eval",),
        ("inbox", "show"),
        ("jobs", "run"),
        ("approvals", "approve"),
    } <= paths


def test_given_bad_input_for_any_command_then_it_exits_1_or_2_with_one_line_and_no_traceback(
    no_aws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    problems = []
    for argv in CASES:
        code, err, by_argparse = run(argv, capsys)
        lines = err.splitlines()
        if "Traceback" in err:
            problems.append(f"{argv}: traceback\n{err}")
        elif code == 0 and argv[-1] in ("--no-such-flag", "garbage%", "nope", "--local"):
            problems.append(f"{argv}: exit 0 for bad input")
        elif code not in (0, 1, 2):
            problems.append(f"{argv}: exit {code}")
        elif code and not by_argparse and not (len(lines) == 1 and lines[0].startswith("lockgate: ")):
            problems.append(f"{argv}: exit {code} with stderr {err!r}")
        elif by_argparse and code == 2 and "error:" not in err:
            problems.append(f"{argv}: argparse exit without a message")
    assert problems == []


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["spend", "--days", "0"], "argument --days: must be at least 1, not 0"),
        (["spend", "--days", "-2"], "argument --days: must be at least 1, not -2"),
        (["jobs", "run", "sweep-inbox", "--time", "yesterday"], "use e.g. 2026-12-01T09:00:00Z"),
        (["cost", "--sample", "0"], "argument --sample: must be at least 1, not 0"),
        (["local", "--port", "99999"], "a port is 0 to 65535, not 99999"),
    ],
)
def test_given_a_bad_value_when_parsing_then_argparse_says_which_and_exits_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err, by_argparse = run(argv, capsys)
    assert (code, by_argparse) == (2, True) and message in err and "Traceback" not in err


def test_a_missing_template_is_one_line_naming_the_path(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["iam-report", "--template", "/nope"], capsys) == (
        2,
        "lockgate: /nope: no such file; check the path\n",
        False,
    )


def test_without_a_region_anywhere_the_stack_commands_say_where_to_give_one(
    no_aws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a samconfig.toml here that names no region, and no AWS environment
    (no_aws / "samconfig.toml").write_text('version = 0.1\n[default.global.parameters]\nstack_name = "x"\n')
    # When a stack command runs without --region
    code, err, _ = run(["spend", "--stack", "lockgate"], capsys)
    # Then it says how to give one (not botocore's NoRegionError)
    assert code == 2
    assert err == (
        "lockgate: no AWS region for stack lockgate: pass --region, set AWS_REGION, "
        "or set region in samconfig.toml\n"
    )


def test_without_credentials_the_stack_commands_say_how_to_get_them(
    no_aws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err, _ = run(["inbox", "status", "--stack", "lockgate", "--region", "eu-west-1"], capsys)
    assert code == 2 and err.startswith("lockgate: no AWS credentials: run `aws configure`")
    code, err, _ = run(["jobs", "status", "--stack", "lockgate", "--profile", "nobody"], capsys)
    assert (code, err) == (2, "lockgate: no AWS profile 'nobody': check --profile or AWS_PROFILE\n")


def test_an_unreachable_aws_endpoint_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given AWS's endpoint is a closed local port
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{closed_port()}")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    code, err, _ = run(["spend", "--stack", "lockgate"], capsys)
    assert code == 2
    assert err.startswith(
        "lockgate: cannot reach AWS for stack lockgate (Could not connect to the endpoint URL"
    )
    assert err.endswith("check the region and your network\n") and err.count("\n") == 1


def test_an_unknown_delivery_says_where_it_looked_and_how_to_list_them(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], aws: object
) -> None:
    from lockgate_infra.cli.targets import Target

    monkeypatch.setattr(
        cli,
        "local_target",
        lambda root, port=None: Target(aws.session, None, aws.names, "the local stack"),  # type: ignore[attr-defined]
    )
    code, err, _ = run(["inbox", "show", "partner#nope"], capsys)
    assert (code, err) == (
        2,
        "lockgate: no delivery partner#nope in the local stack; list them with `lockgate inbox status`\n",
    )


def test_an_unexpected_error_is_one_line_and_debug_shows_the_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a command that hits a bug
    def broken(args: argparse.Namespace) -> int:
        return 1 // 0

    monkeypatch.setattr(cli, "_iam_report", broken)
    # Then the user sees one line naming the error and how to see more
    code, err, _ = run(["iam-report"], capsys)
    assert code == 2
    assert err == (
        "lockgate: unexpected ZeroDivisionError: integer division or modulo by zero; "
        "re-run with `lockgate --debug ...` for the traceback, and please report it\n"
    )
    # And --debug lets a developer see where it came from
    with pytest.raises(ZeroDivisionError):
        cli.main(["--debug", "iam-report"])


def test_an_interrupt_exits_130(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def interrupted(args: argparse.Namespace) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "_iam_report", interrupted)
    assert run(["iam-report"], capsys) == (130, "lockgate: interrupted\n", False)


def test_version_prints_the_installed_distributions_version(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib.metadata import version

    with pytest.raises(SystemExit) as exited:
        cli.main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out == f"lockgate {version('lockgate-app')}\n"


def test_eval_with_the_model_api_unreachable_could_not_run_rather_than_failed_the_gate(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from lockgate_infra.evals import models

    # Given real Claude is asked for, but the API is a closed local port
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{closed_port()}")
    # (the backoff between attempts is recorded instead of slept: the retries are real, the waits are not)
    waits: list[float] = []

    class NoWaiting(models.EvalModelClient):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, sleep=waits.append, **kwargs)

    monkeypatch.setattr(models, "EvalModelClient", NoWaiting)
    argv = ["eval", "support-inbox", "--model", "claude-haiku-5-5", "--runs", "2", "--no-save"]
    # When the eval runs
    code, err, _ = run([*argv, "--only", "refund request over the limit goes to a person"], capsys)
    # Then it retried, then could not run (exit 2, one line), and no gate verdict was printed
    assert waits
    assert code == 2
    assert err == (
        "lockgate: could not run: the model API call failed (connection: could not reach the API); "
        "nothing was scored. Check your network, ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY, "
        "then run it again\n"
    )


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


SAMCONFIG = """version = 0.1
[default.global.parameters]
stack_name = "lockgate"
region = "us-east-1"
[default.deploy.parameters]
capabilities = "CAPABILITY_IAM"
[prod.global.parameters]
stack_name = "lockgate-prod"
region = "eu-west-1"
"""


def test_samconfig_gives_the_region_of_the_environment_naming_the_stack_else_defaults(tmp_path: Path) -> None:
    path = tmp_path / "samconfig.toml"
    path.write_text(SAMCONFIG)
    assert samconfig_region(path, "lockgate-prod") == "eu-west-1"
    assert samconfig_region(path, "lockgate") == "us-east-1"
    assert samconfig_region(path, "someone-else") == "us-east-1"  # [default]'s
    assert samconfig_region(tmp_path / "missing.toml", "lockgate") is None
    # and the shipped file, as the README says
    shipped = Path(cli.ROOT) / "samconfig.toml"
    assert {samconfig_region(shipped, name) for name in ("lockgate", "lockgate-prod")} == {"us-east-1"}


@pytest.fixture
def prod_stack(no_aws: Path) -> Iterator[str]:
    """moto with a deployed "lockgate-prod" stack in eu-west-1 (its StateTable only) and samconfig here."""
    (no_aws / "samconfig.toml").write_text(SAMCONFIG)
    template = {
        "Resources": {
            "StateTable": {
                "Type": "AWS::DynamoDB::Table",
                "Properties": {
                    "BillingMode": "PAY_PER_REQUEST",
                    "AttributeDefinitions": [
                        {"AttributeName": "pk", "AttributeType": "S"},
                        {"AttributeName": "sk", "AttributeType": "S"},
                    ],
                    "KeySchema": [
                        {"AttributeName": "pk", "KeyType": "HASH"},
                        {"AttributeName": "sk", "KeyType": "RANGE"},
                    ],
                },
            }
        }
    }
    with embedded_aws():
        boto3.client(
            "cloudformation",
            region_name="eu-west-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",  # noqa: S106 - moto's
        ).create_stack(StackName="lockgate-prod", TemplateBody=json.dumps(template))
        yield "lockgate-prod"


def credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")


def seed_spend(stack: str, usd: float) -> None:
    """A finished run's spend in the stack's StateTable in eu-west-1, written with plain boto3."""
    from lockgate.clock import SystemClock
    from lockgate.model.client import Usage
    from lockgate.model.usage import ModelTotals, UsageRollup
    from lockgate.telemetry import CountingMetrics
    from tests.support import LOG

    session = boto3.session.Session(
        aws_access_key_id="testing",
        aws_secret_access_key="testing",  # noqa: S106 - moto's
        region_name="eu-west-1",
    )
    table = session.client("cloudformation").describe_stack_resource(
        StackName=stack, LogicalResourceId="StateTable"
    )["StackResourceDetail"]["PhysicalResourceId"]
    totals = ModelTotals()
    totals.add(Usage(input_tokens=100, output_tokens=10), usd)
    rollup = UsageRollup(session.client("dynamodb"), table, SystemClock(), log=LOG, metrics=CountingMetrics())
    rollup.add_run("r1", "support-inbox", {"claude-sonnet-5-5": totals})


def spent(capsys: pytest.CaptureFixture[str]) -> list[tuple[str, float]]:
    return [(r["task"], r["usd"]) for r in json.loads(capsys.readouterr().out)]


def test_a_stack_command_without_region_uses_samconfigs_region_for_that_stack(
    prod_stack: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a run's spend recorded in the prod stack's table, in eu-west-1 (samconfig's [prod])
    credentials(monkeypatch)
    seed_spend(prod_stack, 0.25)
    # When the operator asks for spend with neither --region nor AWS_REGION
    code = cli.main(["spend", "--stack", prod_stack, "--json"])
    # Then it read the prod stack's table in samconfig's region
    assert code == 0 and spent(capsys) == [("support-inbox", 0.25)]


def test_the_aws_environment_region_wins_over_samconfig_and_region_over_both(
    prod_stack: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    credentials(monkeypatch)
    # Given AWS_REGION names another region: the stack is looked for there, and is not found
    monkeypatch.setenv("AWS_REGION", "us-west-2")
    code, err, _ = run(["spend", "--stack", prod_stack], capsys)
    assert (code, err) == (
        2,
        "lockgate: no stack 'lockgate-prod' in us-west-2: check --stack and --region "
        "(`aws cloudformation list-stacks` lists them)\n",
    )
    # And --region beats the environment
    assert run(["spend", "--stack", prod_stack, "--region", "eu-west-1"], capsys)[0] == 0


def test_profile_supplies_credentials_and_region(
    prod_stack: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a named profile with eu-west-1 and keys (none in the environment), samconfig saying otherwise
    Path("samconfig.toml").write_text(SAMCONFIG.replace('"eu-west-1"', '"ap-south-1"'))
    config = Path("aws-config").resolve()
    config.write_text(
        "[profile ops]\nregion = eu-west-1\naws_access_key_id = testing\naws_secret_access_key = testing\n"
    )
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    seed_spend(prod_stack, 0.5)
    # When a stack command names the profile
    code = cli.main(["spend", "--stack", prod_stack, "--profile", "ops", "--json"])
    # Then it read the stack's table with the profile's credentials, in the profile's region
    assert code == 0 and spent(capsys) == [("support-inbox", 0.5)]
