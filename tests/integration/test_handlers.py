"""The real Lambda handlers, imported as Lambda would, on moto with the shipped lockgate.toml."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from lockgate.config import load_config
from lockgate.errors import ConfigError
from lockgate.webhooks.signing import sign
from lockgate_infra.local.devsecrets import seed_dev_secrets
from tests.support import Aws, function_env, workflow_env

ROOT = Path(__file__).resolve().parents[2]


class FakeContext:
    function_name = "test"
    memory_limit_in_mb = 512
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:test"
    aws_request_id = "req-1"

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"{name}_app", ROOT / "functions" / name / "app.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def handlers(aws: Aws, monkeypatch: pytest.MonkeyPatch) -> tuple[ModuleType, ModuleType, dict[str, str]]:
    config = load_config(ROOT / "lockgate.toml")
    secrets = seed_dev_secrets(config, aws.client("secretsmanager"))
    for name, value in function_environment(aws).items():
        monkeypatch.setenv(name, value)
    return load("webhook_receiver"), load("agent_worker"), secrets


def function_environment(aws: Aws) -> dict[str, str]:
    """What the template gives the receiver and the worker, pointed at moto's resources."""
    return {
        **function_env(aws),
        **workflow_env(),  # the shop's tables and address: without them the worker refuses to start
        "LOCKGATE_CONFIG": str(ROOT / "lockgate.toml"),
        "WORKER_TIMEOUT_SECONDS": "60",
    }


def api_event(source: str, body: bytes, headers: dict[str, str]) -> dict[str, Any]:
    return {
        "version": "2.0",
        "routeKey": "POST /webhooks/{source}",
        "rawPath": f"/webhooks/{source}",
        "headers": headers,
        "pathParameters": {"source": source},
        "body": body.decode(),
        "isBase64Encoded": False,
        "requestContext": {"http": {"method": "POST", "path": f"/webhooks/{source}"}, "requestId": "r"},
    }


def test_receiver_and_worker_handlers_end_to_end(aws: Aws, handlers: Any) -> None:
    receiver, worker, secrets = handlers
    config = load_config(ROOT / "lockgate.toml")
    partner = config.sources["partner"]
    now = int(time.time())
    good = json.dumps(
        {"type": "order.updated", "order": {"id": "A-1", "status": "shipped", "updated_at": now}}
    ).encode()
    broken = json.dumps({"type": "order.updated", "order": {}}).encode()
    # Given two signed partner deliveries, one malformed for its handler, and one forged
    replies = [
        receiver.handler(
            api_event(
                "partner",
                body,
                sign(partner, secrets["partner"], body, now, delivery_id=did, event_type="order.updated"),
            ),
            FakeContext(),
        )
        for did, body in (("p-1", good), ("p-2", broken))
    ]
    forged = receiver.handler(
        api_event("partner", good, sign(partner, "wrong", good, now, delivery_id="p-3")), FakeContext()
    )
    assert [r["statusCode"] for r in replies] == [200, 200]
    assert forged["statusCode"] == 401
    # When the worker handler gets the queued pointers as one SQS batch
    messages = aws.drain(aws.queue_url)
    event = {
        "Records": [
            {
                "messageId": m["MessageId"],
                "receiptHandle": m["ReceiptHandle"],
                "body": m["Body"],
                "attributes": {"ApproximateReceiveCount": "1"},
                "messageAttributes": {},
                "eventSource": "aws:sqs",
                "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:q",
                "awsRegion": "us-east-1",
                "md5OfBody": "",
            }
            for m in messages
        ]
        + [
            {
                "messageId": "junk",
                "receiptHandle": "junk",
                "body": "not a pointer",
                "attributes": {},
                "messageAttributes": {},
                "eventSource": "aws:sqs",
                "eventSourceARN": "arn",
                "awsRegion": "us-east-1",
                "md5OfBody": "",
            }
        ]
    }
    result = worker.handler(event, FakeContext())
    # Then only the junk message is reported failed; the good delivery is done, the broken one set aside
    assert result == {"batchItemFailures": [{"itemIdentifier": "junk"}]}
    rows = {i["pk"]["S"]: i for i in aws.inbox_items()}
    assert rows["partner#p-1"]["status"]["S"] == "done"
    assert rows["partner#p-1"]["outcome"]["S"] == "order A-1 is now shipped"
    assert rows["partner#p-2"]["status"]["S"] == "failed"
    assert "partner#p-3" not in rows


MISSING_MAIL_TABLE = (
    "workflow shop: resource ShopMailTable needs the environment variable SHOP_MAIL_TABLE, which this "
    "function does not set; in template.yaml add `SHOP_MAIL_TABLE: !Ref ShopMailTable` to its "
    "Environment Variables (and run `lockgate check`)"
)


@pytest.mark.parametrize("function", ["agent_worker", "scheduled_jobs"])
def test_given_a_workflows_declared_table_without_its_variable_then_the_function_refuses_to_start(
    aws: Aws, monkeypatch: pytest.MonkeyPatch, function: str
) -> None:
    # Given the function's environment as the template gives it, but without the shop's mail table
    for name, value in {**function_environment(aws), "JOBS_TIMEOUT_SECONDS": "300"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("SHOP_MAIL_TABLE")
    # When Lambda initialises it, then it stops there with what to add to template.yaml: the shop is
    # never silently left out while the function serves everything else
    with pytest.raises(ConfigError) as refused:
        load(function)
    assert str(refused.value) == MISSING_MAIL_TABLE


def test_given_a_jobs_function_that_runs_no_workflow_job_then_it_starts_without_their_variables(
    aws: Aws, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given EvalJobsFunction's shape: JOBS=eval, none of the workflows' variables
    for name, value in {**function_env(aws), "JOBS": "eval", "JOBS_TIMEOUT_SECONDS": "900"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("LOCKGATE_CONFIG", str(ROOT / "lockgate.toml"))
    # Then it starts: only a function that builds the workflows' tasks needs their resources
    assert set(load("scheduled_jobs").jobs) == {"eval"}


def test_a_source_without_its_secret_fails_closed_alone(aws: Aws, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a deployment where only the partner's webhook secret was created
    config = load_config(ROOT / "lockgate.toml")
    partner, github = config.sources["partner"], config.sources["github"]
    aws.client("secretsmanager").create_secret(Name="lockgate/webhooks/partner", SecretString="partner-key")
    for name, value in function_environment(aws).items():
        monkeypatch.setenv(name, value)
    # When the receiver cold-starts (it does: one missing secret must not stop every source)
    receiver = load("webhook_receiver")
    now = int(time.time())
    body = json.dumps({"type": "order.updated"}).encode()
    ok = receiver.handler(
        api_event("partner", body, sign(partner, "partner-key", body, now, delivery_id="p-1")), FakeContext()
    )
    # Then the partner's delivery is stored, and GitHub's gets 503 (even signed with a guess) so it retries
    guessed = receiver.handler(
        api_event("github", body, sign(github, "guess", body, now, delivery_id="g-1")), FakeContext()
    )
    assert (ok["statusCode"], guessed["statusCode"]) == (200, 503)
    assert [i["pk"]["S"] for i in aws.inbox_items()] == ["partner#p-1"]


def test_the_receiver_handler_imports_neither_the_agent_stack_nor_the_other_sections_config(
    tmp_path: Path,
) -> None:
    # Given the receiver's handler imported in a fresh interpreter as Lambda does (its folder and
    # the layer on sys.path), with a config whose secrets are env: ones and no AWS to reach
    config = tmp_path / "lockgate.toml"
    config.write_text('[sources.github]\nscheme = "github"\nsecrets = ["env:GITHUB_SECRET"]\n', "utf-8")
    env = {
        "PATH": "/usr/bin:/bin",
        "LOCKGATE_CONFIG": str(config),
        "GITHUB_SECRET": "s3cret-for-the-import",
        "INBOX_TABLE": "inbox",
        "INBOX_QUEUE_URL": "http://127.0.0.1:9/queue/inbox",
        "BODY_BUCKET": "bodies",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9",
    }
    folders = [str(ROOT / "functions" / "webhook_receiver"), str(ROOT / "layers" / "core")]
    code = (
        "import sys\n"
        f"sys.path[:0] = {folders!r}\n"
        "import app\n"
        "heavy = ('anthropic', 'pydantic', 'httpx', 'lockgate.config.model', 'lockgate.config.parsing',\n"
        "         'lockgate.workflows', 'lockgate.declared', 'shop', 'opentelemetry', 'aws_xray_sdk')\n"
        "print('loaded:', *[m for m in heavy if m in sys.modules])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    # Then it started (its one source ready) and paid neither for the model SDK, nor for the config
    # types it never reads, nor for the workflows (their packages and declarations), nor for
    # OpenTelemetry (no wrapper loaded it: spans would record nothing) or the X-Ray SDK
    assert '"message":"source ready"' in out.stdout
    assert out.stdout.splitlines()[-1] == "loaded:"
