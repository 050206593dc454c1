"""``make conformance-aws PROFILE=name`` runs the conformance suite against that profile's account.

There is no AWS account here, so the "account" is a moto server that the profile points at
(``endpoint_url`` in the AWS config file). Everything else is the real opt-in path: the profile's
region and credentials, the tests' network guard and fake credentials off, each test's own
resources made and deleted.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest

from lockgate_infra.local.moto_server import MotoServer

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def account() -> Iterator[str]:
    with MotoServer() as server:
        yield server.endpoint_url


def _make(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 - make, with our own arguments
        ["make", "--no-print-directory", *args],  # noqa: S607
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def _without_aws_variables() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "LOCKGATE_"))}


def test_without_a_profile_it_says_in_one_line_what_to_give() -> None:
    result = _make("conformance-aws", env=_without_aws_variables())

    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert "needs the AWS profile to test against, e.g. make conformance-aws PROFILE=dev" in result.stderr


def test_with_a_profile_the_suite_runs_once_against_its_account_and_cleans_up(
    account: str, tmp_path: Path
) -> None:
    # Given a profile whose endpoint is the "account"
    config = tmp_path / "config"
    config.write_text(
        "[profile conformance-check]\n"
        "region = eu-west-1\n"
        f"endpoint_url = {account}\n"
        "aws_access_key_id = conformance\n"
        "aws_secret_access_key = conformance\n",
        encoding="utf-8",
    )
    env = {
        **_without_aws_variables(),
        "AWS_CONFIG_FILE": str(config),
        "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
    }

    # When the opt-in target runs two of the suite's tests with that profile
    result = _make(
        "conformance-aws",
        "PROFILE=conformance-check",
        "CONFORMANCE_ARGS=-n 0 -v -k 'cancelled_transaction_emits_nothing or dead_letter'",
        env=env,
    )

    # Then they ran once each, as [aws], and passed
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "2 passed" in result.stdout
    assert result.stdout.count("[aws] PASSED") == 2
    assert "[embedded stack]" not in result.stdout
    # ...leaving nothing behind in the account
    for region in ("eu-west-1", "us-east-1"):
        session = boto3.session.Session(
            aws_access_key_id="conformance",
            aws_secret_access_key="conformance",
            region_name=region,  # noqa: S106
        )
        tables = session.client("dynamodb", endpoint_url=account).list_tables()["TableNames"]
        queues = session.client("sqs", endpoint_url=account).list_queues().get("QueueUrls", [])
        assert [name for name in [*tables, *queues] if "lockgate-conformance-" in name] == []
