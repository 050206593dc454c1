"""`lockgate local --provider`: the model calls over Bedrock's wire format to the stub, signed with SigV4
(the worker built as it deploys on Bedrock), a one-line refusal for an unknown provider, the copy
of lockgate.toml gone when the run ends."""

from __future__ import annotations

import io
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from lockgate.agent.runs import RunStore
from lockgate.clock import SystemClock
from lockgate.config import load_config
from lockgate.model.client import Usage
from lockgate.model.price_table import PriceTable
from lockgate.model.usage import TOKEN_FIELDS
from lockgate.webhooks.signing import sign
from lockgate_infra.cli import main as cli
from lockgate_infra.local.devsecrets import dev_secret
from lockgate_infra.local.loopback import request
from lockgate_infra.local.model_provider import provider_config
from lockgate_infra.stub import server
from tests.support import local_stack_in_thread

ROOT = Path(__file__).resolve().parents[2]


def started_stubs(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every stub server started from now on (the local stack's model stand-in)."""
    stubs: list[Any] = []
    start = server.StubAnthropic.start
    monkeypatch.setattr(server.StubAnthropic, "start", lambda self: stubs.append(self) or start(self))
    return stubs


def send_email(stack: Any, message_id: str) -> int:
    """A customer's email to the helpdesk source, signed as the helpdesk provider signs it."""
    source = load_config(stack.config_path).source("helpdesk")
    email = {"message_id": message_id, "from": "ada@example.com", "subject": "Where is my order A-1042?"}
    body = json.dumps({**email, "text": "Hi, where is order A-1042? Ada"}).encode()
    headers = sign(
        source, dev_secret(source), body, int(time.time()), delivery_id=message_id, event_type="unknown"
    )
    return request(f"{stack.gateway.url}/webhooks/helpdesk", body, headers)[0]


def test_given_local_on_bedrock_when_an_email_arrives_then_the_worker_invokes_bedrock_signed_with_sigv4(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stubs, out = started_stubs(monkeypatch), io.StringIO()
    # Given `lockgate local --provider bedrock` with the shipped lockgate.toml (Anthropic's API)
    with local_stack_in_thread(out, provider="bedrock", model="demo", clock_speed=None) as stack:
        copy = stack.config_path
        # When a customer's email arrives and the worker has run its task
        assert send_email(stack, "msg-bedrock-1") == 200
        assert stack.drain(timeout=60)
        runs = RunStore(stack.client("dynamodb"), stack.resources["StateTable"], SystemClock())
        run = runs.get("helpdesk#msg-bedrock-1")
    # Then the task completed, every model call was Bedrock's InvokeModel signed for the service
    # bedrock in the stack's region, on the ids `--provider bedrock` mapped
    assert run is not None and run.status == "completed", out.getvalue()
    (stub,) = stubs
    assert stub.wire and set(stub.wire) == {"bedrock"}
    assert stub.signatures == ["us-east-1/bedrock"] * len(stub.wire)
    assert {bedrock_id.split(".")[0] for bedrock_id in stub.bedrock_ids} == {"us"}
    # And the run was priced at Bedrock's regional prices (us. profiles), with none typed in
    regional = PriceTable.published("bedrock", dict.fromkeys(run.totals["by_model"], "us.anthropic.x"))
    priced = sum(
        regional.cost_usd(model, Usage(**{k: v for k, v in counted.items() if k in TOKEN_FIELDS}))
        for model, counted in run.totals["by_model"].items()
    )
    assert run.totals["cost_usd"] == pytest.approx(priced, abs=1e-5) and priced > 0
    assert "provider:     Amazon Bedrock\n" in out.getvalue()
    # And its config copy is gone
    assert copy != ROOT / "lockgate.toml" and not copy.exists()


def test_given_bedrock_prices_in_the_config_then_they_stay_as_an_override(tmp_path: Path) -> None:
    # Given a config that prices one model on Bedrock and uses the provider's own id for it
    config = tmp_path / "lockgate.toml"
    config.write_text(
        '[provider]\nname = "anthropic"\n[provider.bedrock_models]\n'
        '"claude-sonnet-5-5" = "eu.anthropic.claude-sonnet-5-5-v1:0"\n'
        '[models."claude-sonnet-5-5".bedrock]\ninput = 2.2\noutput = 11.0\ncache_read = 0.11\n',
        encoding="utf-8",
    )
    with provider_config(config, "bedrock") as wire:
        chosen = load_config(wire.config_path)
    # Then the run keeps its id and price, and only what it lacked was filled in
    assert chosen.provider.name == "bedrock"
    assert chosen.provider.bedrock_models["claude-sonnet-5-5"] == "eu.anthropic.claude-sonnet-5-5-v1:0"
    assert chosen.provider.bedrock_models["claude-haiku-5-5"] == "us.anthropic.claude-haiku-5-5-v1:0"
    assert chosen.models["claude-sonnet-5-5"].price_on("bedrock").input == 2.2  # type: ignore[union-attr]
    # And the file the user wrote is as it was
    assert load_config(config).provider.name == "anthropic"


@pytest.mark.parametrize("command", ["local", "demo"])
def test_given_an_unknown_provider_then_the_command_refuses_in_one_line_and_starts_nothing(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = cli.main([command, "--provider", "vertex"] + (["--port", "0"] if command == "local" else []))
    err = capsys.readouterr().err
    assert (code, err) == (2, "lockgate: --provider must be one of anthropic, bedrock, aws, not 'vertex'\n")
    assert not list(ROOT.glob(f".lockgate-local-*-{os.getpid()}.toml"))  # this process wrote no copy


def test_given_an_aws_provider_then_real_claude_is_refused_as_the_local_model(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli.main(["demo", "--provider", "aws", "--model", "claude"]) == 2
    assert capsys.readouterr().err.startswith(
        "lockgate: --model claude calls Anthropic's API; on provider aws"
    )
