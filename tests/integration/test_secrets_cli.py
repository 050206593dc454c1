"""`lockgate secrets` against moto: what it stores, what it shows (never values), what then verifies."""

from __future__ import annotations

import io
import json
import os
import re
import shlex
from pathlib import Path
from typing import Any

import pytest

from lockgate.config import load_config
from lockgate.webhooks.signing import sign
from lockgate_infra.cli import main as cli
from lockgate_infra.local.devsecrets import dev_secret
from lockgate_infra.local.moto_server import MotoServer
from lockgate_infra.local.template import load_template
from tests.support import Harness

ROOT = Path(__file__).resolve().parents[2]
CONFIG = load_config(ROOT / "lockgate.toml")
MODEL_KEY = "sk-ant-api03-test-model-key"
VALUES = {name: dev_secret(source) for name, source in CONFIG.sources.items()} | {
    "model-key": MODEL_KEY,
    "mcp-tickets": "example-mcp-token",
}
MCP = [f"mcp-{name}" for name in CONFIG.mcp]  # [mcp.servers.NAME]'s credentials


def stack_template() -> dict[str, Any]:
    """A stack with the two functions whose environment names their secrets, as in template.yaml."""
    template = load_template(ROOT / "template.yaml")
    real = template["Resources"]

    def function(logical_id: str, variable: str) -> dict[str, Any]:
        value = real[logical_id]["Properties"]["Environment"]["Variables"][variable]
        return {
            "Type": "AWS::Lambda::Function",
            "Properties": {
                "Runtime": "python3.13",
                "Handler": "app.handler",
                "Role": {"Fn::GetAtt": ["Role", "Arn"]},
                "Code": {"ZipFile": "def handler(event, context): pass"},
                "Environment": {"Variables": {variable: value}},
            },
        }

    trust = {"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}
    return {
        # Empty: the stack's name, as the template's default.
        "Parameters": {
            "SecretsPrefix": {"Type": "String", "Default": ""},
            "ModelProvider": {"Type": "String", "Default": "anthropic"},  # the model key's condition
        },
        "Conditions": {
            name: template["Conditions"][name] for name in ("HasSecretsPrefix", "UsesAnthropicApi")
        },
        "Resources": {
            "Role": {
                "Type": "AWS::IAM::Role",
                "Properties": {"AssumeRolePolicyDocument": {"Version": "2012-10-17", "Statement": [trust]}},
            },
            "WebhookReceiverFunction": function("WebhookReceiverFunction", "SECRETS_PREFIX"),
            "AgentWorkerFunction": function("AgentWorkerFunction", "ANTHROPIC_API_KEY_REF"),
        },
    }


@pytest.fixture
def stack(harness: Harness) -> Harness:
    """A CloudFormation stack named lockgate on moto (the `aws` fixture's account)."""
    harness.client("cloudformation").create_stack(
        StackName="lockgate", TemplateBody=json.dumps(stack_template())
    )
    return harness


def lockgate(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *args: str, stdin: str = ""
) -> tuple[int, str, str]:
    """Run the CLI with ``stdin`` piped in; its exit code, stdout and stderr."""
    monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    code = cli.main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def stored(harness: Harness, name: str) -> str:
    return str(harness.client("secretsmanager").get_secret_value(SecretId=name)["SecretString"])


def test_set_stores_the_piped_value_and_never_prints_it(
    stack: Harness, capsys: Any, monkeypatch: Any
) -> None:
    # When the operator pipes GitHub's secret into `secrets set`
    code, out, err = lockgate(
        capsys, monkeypatch, "secrets", "set", "github", "--stack", "lockgate", stdin="gh-s3cret-value\n"
    )
    # Then it is stored (without the newline) under the name lockgate.toml gives, and not echoed
    assert code == 0, err
    assert stored(stack, "lockgate/webhooks/github") == "gh-s3cret-value"
    assert "gh-s3cret-value" not in out + err
    assert "secretsmanager:lockgate/webhooks/github" in out
    # and a second set replaces it
    lockgate(capsys, monkeypatch, "secrets", "set", "github", "--stack", "lockgate", stdin="next-value")
    assert stored(stack, "lockgate/webhooks/github") == "next-value"


def test_at_a_terminal_the_value_is_typed_at_a_prompt_that_does_not_echo(
    stack: Harness, capsys: Any, monkeypatch: Any
) -> None:
    prompts: list[str] = []

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr("sys.stdin", Terminal())
    monkeypatch.setattr("getpass.getpass", lambda prompt: prompts.append(prompt) or "typed-value")
    assert cli.main(["secrets", "set", "partner", "--stack", "lockgate"]) == 0
    assert prompts == ["value for partner (not shown): "]
    assert stored(stack, "lockgate/webhooks/partner") == "typed-value"


def test_list_shows_every_source_and_the_model_key_by_name_never_a_value(
    stack: Harness, capsys: Any, monkeypatch: Any
) -> None:
    # Given two secrets stored, one of them unusable for its scheme, and the rest missing
    lockgate(capsys, monkeypatch, "secrets", "set", "github", "--stack", "lockgate", stdin=VALUES["github"])
    stack.client("secretsmanager").create_secret(Name="lockgate/webhooks/helpdesk", SecretString="not-whsec!")
    # When the operator lists them
    code, out, err = lockgate(capsys, monkeypatch, "secrets", "list", "--stack", "lockgate")
    # Then each source and the model key has a line with its reference and state; no value appears
    assert code == 0, err
    lines = {line.split()[0]: line for line in out.splitlines()[1:]}
    assert set(lines) == {*CONFIG.sources, "model-key", *MCP}
    assert re.search(r"secretsmanager:lockgate/webhooks/github\s+present\s+\d{4}-\d\d-\d\d", lines["github"])
    assert "unusable (source 'helpdesk': secret #1 is not whsec_<base64> or base64)" in lines["helpdesk"]
    assert "missing" in lines["stripe"]
    assert "secretsmanager:lockgate/anthropic-api-key  missing" in re.sub(r" +", "  ", lines["model-key"])
    assert VALUES["github"] not in out + err and "not-whsec!" not in out + err


def test_check_fails_naming_what_is_missing_then_passes_once_everything_is_set(
    stack: Harness, capsys: Any, monkeypatch: Any
) -> None:
    # Given only the partner's secret
    lockgate(capsys, monkeypatch, "secrets", "set", "partner", "--stack", "lockgate", stdin=VALUES["partner"])
    # Then check fails and names each missing one
    code, out, _ = lockgate(capsys, monkeypatch, "secrets", "check", "--stack", "lockgate")
    assert code == 1
    assert "github: secretsmanager:lockgate/webhooks/github is missing" in out
    assert "model-key: secretsmanager:lockgate/anthropic-api-key is missing" in out
    assert "partner:" not in out
    # When the rest are set, it passes
    for name in [*CONFIG.sources, "model-key", *MCP]:
        assert (
            lockgate(capsys, monkeypatch, "secrets", "set", name, "--stack", "lockgate", stdin=VALUES[name])[
                0
            ]
            == 0
        )
    code, out, _ = lockgate(capsys, monkeypatch, "secrets", "check", "--stack", "lockgate")
    assert (code, out.strip()) == (0, "all 9 secret(s) present and usable")


def test_a_secret_the_receiver_may_not_read_is_reported(
    harness: Harness, capsys: Any, monkeypatch: Any
) -> None:
    # Given a stack deployed with another SecretsPrefix than the names in lockgate.toml
    harness.client("cloudformation").create_stack(
        StackName="lockgate",
        TemplateBody=json.dumps(stack_template()),
        Parameters=[{"ParameterKey": "SecretsPrefix", "ParameterValue": "shop"}],
    )
    lockgate(capsys, monkeypatch, "secrets", "set", "github", "--stack", "lockgate", stdin=VALUES["github"])
    # Then check fails: the receiver's role could not read the secret just stored
    code, out, _ = lockgate(capsys, monkeypatch, "secrets", "check", "--stack", "lockgate")
    assert code == 1
    assert "is unreadable (the receiver may read only shop/webhooks/*)" in out
    assert "model-key: secretsmanager:shop/anthropic-api-key is missing" in out


def partner_reply(harness: Harness, secret: str, delivery_id: str) -> int:
    """A fresh receiver (as after a cold start) answering a partner delivery signed with ``secret``."""
    receiver = harness.receiver_on_secrets_manager(CONFIG)
    body = json.dumps({"type": "order.updated"}).encode()
    headers = sign(CONFIG.sources["partner"], secret, body, int(harness.clock.now()), delivery_id=delivery_id)
    return harness.post("partner", body, headers, receiver=receiver).status


def test_rotate_in_then_out_changes_which_secret_verifies(
    stack: Harness, capsys: Any, monkeypatch: Any
) -> None:
    lockgate(capsys, monkeypatch, "secrets", "set", "partner", "--stack", "lockgate", stdin="old-partner-key")
    # When a new secret is rotated in, deliveries signed with either verify
    code, out, err = lockgate(
        capsys, monkeypatch, "secrets", "rotate-in", "partner", "--stack", "lockgate", stdin="new-partner-key"
    )
    assert code == 0, err
    assert "new-partner-key" not in out + err and "old-partner-key" not in out + err
    assert [
        partner_reply(stack, "old-partner-key", "p-1"),
        partner_reply(stack, "new-partner-key", "p-2"),
    ] == [
        200,
        200,
    ]
    assert "rotating" in lockgate(capsys, monkeypatch, "secrets", "list", "--stack", "lockgate")[1]
    # When the old one is rotated out, only the new one verifies
    assert lockgate(capsys, monkeypatch, "secrets", "rotate-out", "partner", "--stack", "lockgate")[0] == 0
    assert partner_reply(stack, "old-partner-key", "p-3") == 401
    assert partner_reply(stack, "new-partner-key", "p-4") == 200
    assert stored(stack, "lockgate/webhooks/partner") == "new-partner-key"


@pytest.mark.parametrize(
    ("args", "stdin", "message"),
    [
        (("set", "nope"), "value-x-9f2", "no source 'nope' in lockgate.toml"),
        (
            ("set", "helpdesk"),
            "plain-not-whsec!",
            "source 'helpdesk': secret #1 is not whsec_<base64> or base64",
        ),
        (("set", "github"), "", "no value given for github"),
        (("rotate-out", "github"), "", "github is not rotating"),
        (("rotate-in", "github"), "fresh-value-9f2", "github has no secret to rotate from"),
        (("rotate-in", "model-key"), "fresh-value-9f2", "model-key needs no overlap"),
    ],
)
def test_bad_input_is_one_line_and_stores_nothing(
    stack: Harness, capsys: Any, monkeypatch: Any, args: tuple[str, ...], stdin: str, message: str
) -> None:
    code, out, err = lockgate(capsys, monkeypatch, "secrets", *args, "--stack", "lockgate", stdin=stdin)
    assert code == 2
    assert err.startswith("lockgate: ") and message in err and err.count("\n") == 1
    assert "Traceback" not in out + err and (not stdin or stdin not in err)
    names = [s["Name"] for s in stack.client("secretsmanager").list_secrets()["SecretList"]]
    assert not [name for name in names if name.startswith("lockgate/")]


def readme_secrets_commands() -> list[list[str]]:
    """The `lockgate secrets` lines of the deploy guide (docs/deploy.md), in order, as argv."""
    guide = (ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
    lines = [line.split("#")[0].strip() for line in guide.splitlines()]
    return [shlex.split(line)[1:] for line in lines if line.startswith(".venv/bin/lockgate secrets ")]


def test_the_deploy_guides_secrets_commands_work_as_written(
    stack: Harness, capsys: Any, monkeypatch: Any
) -> None:
    commands = readme_secrets_commands()
    sets = [argv[2] for argv in commands if argv[1] == "set"]
    # The guide stores a secret for every source of the shipped lockgate.toml and the model key, then
    # checks, then shows a rotation
    assert sorted(sets) == sorted([*CONFIG.sources, "model-key", *MCP])
    assert [argv[1] for argv in commands[len(sets) :]] == ["check", "rotate-in", "rotate-out"]
    piped = {"set": lambda name: VALUES[name], "rotate-in": lambda name: f"rotated-{VALUES[name]}"}
    for argv in commands:
        stdin = piped[argv[1]](argv[2]) if argv[1] in piped else ""
        code, out, err = lockgate(capsys, monkeypatch, *argv, stdin=stdin)
        assert code == 0, (argv, out, err)
    assert stored(stack, "lockgate/anthropic-api-key") == MODEL_KEY
    assert stored(stack, "lockgate/webhooks/github") == f"rotated-{VALUES['github']}"


def test_local_stack_secrets(tmp_path: Path, capsys: Any, monkeypatch: Any) -> None:
    # Given a running local stack: a moto server and the state file `lockgate local` writes
    server = MotoServer()
    server.start()
    server.reset()  # moto's state is per process
    try:
        state = {"pid": os.getpid(), "port": 8787, "endpoint_url": server.endpoint_url, "region": "us-east-1",
                 "resources": {}, "config": str(ROOT / "lockgate.toml")}  # fmt: skip
        (tmp_path / ".lockgate").mkdir()
        (tmp_path / ".lockgate" / "local-8787.json").write_text(json.dumps(state))
        monkeypatch.setattr(cli, "ROOT", tmp_path)
        # When every source's secret and MCP credential is set on it
        for name in [*CONFIG.sources, *MCP]:
            assert (
                lockgate(capsys, monkeypatch, "secrets", "set", name, "--local", stdin=VALUES[name])[0] == 0
            )
        # Then check passes (the local model key comes from `lockgate local --model`, not a secret)
        code, out, _ = lockgate(capsys, monkeypatch, "secrets", "check", "--local")
        assert (code, out.strip()) == (0, "all 9 secret(s) present and usable")
        _, listed, _ = lockgate(capsys, monkeypatch, "secrets", "list", "--local")
        assert "local (chosen by `lockgate local --model`)" in listed
        assert not any(value in listed for value in VALUES.values())
        code, _, err = lockgate(capsys, monkeypatch, "secrets", "set", "model-key", "--local", stdin="k")
        assert code == 2 and "lockgate local --model" in err
    finally:
        server.stop()


def test_a_prod_stack_gets_its_stage_overlay_names(harness: Harness, capsys: Any, monkeypatch: Any) -> None:
    # Given the prod stack (Stage=prod), beside dev in one account
    template = stack_template()
    template["Parameters"]["Stage"] = {"Type": "String", "Default": "dev"}
    harness.client("cloudformation").create_stack(
        StackName="lockgate-prod",
        TemplateBody=json.dumps(template),
        Parameters=[{"ParameterKey": "Stage", "ParameterValue": "prod"}],
    )
    # When the operator stores prod's GitHub secret
    code, out, err = lockgate(
        capsys, monkeypatch, "secrets", "set", "github", "--stack", "lockgate-prod", stdin="prod-gh-value"
    )
    # Then it goes where stages/prod.toml says prod's receiver reads it, not to dev's name
    assert code == 0, err
    assert stored(harness, "lockgate-prod/webhooks/github") == "prod-gh-value"
    names = [s["Name"] for s in harness.client("secretsmanager").list_secrets()["SecretList"]]
    assert "lockgate/webhooks/github" not in names
    assert "secretsmanager:lockgate-prod/webhooks/github" in out


SLACK = """
[approvals.slack]
channel = "C0123ABCD"
bot_token = "secretsmanager:lockgate/slack/bot"
signing_secret = "secretsmanager:{signing}"
team_id = "T0123ABCD"
"""


def test_slack_approvals_secrets_are_stored_listed_and_checked_by_name(
    stack: Harness, tmp_path: Path, capsys: Any, monkeypatch: Any
) -> None:
    # Given a lockgate.toml with Slack approvals, its signing secret named outside what the
    # callback's role may read
    config = tmp_path / "lockgate.toml"
    base = (ROOT / "lockgate.toml").read_text(encoding="utf-8")
    config.write_text(base + SLACK.format(signing="elsewhere/slack-signing"), encoding="utf-8")
    on = ("--stack", "lockgate", "--config", str(config))
    # When the operator stores the bot token
    code, out, err = lockgate(capsys, monkeypatch, "secrets", "set", "slack-bot", *on, stdin="xoxb-1-2-abc\n")
    # Then it is where the notifier reads it, never printed, and described for what it is
    assert code == 0, err
    assert stored(stack, "lockgate/slack/bot") == "xoxb-1-2-abc" and "xoxb-1-2-abc" not in out + err
    described = stack.client("secretsmanager").describe_secret(SecretId="lockgate/slack/bot")
    assert described["Description"] == "Lockgate: Slack approvals (bot token)"
    # And list names both; check reports the one the callback could never read, by its reader
    code, out, _ = lockgate(capsys, monkeypatch, "secrets", "list", *on)
    lines = {line.split()[0]: line for line in out.splitlines()[1:]}
    assert "present" in lines["slack-bot"]
    assert "unreadable (the callback may read only lockgate/slack/signing*)" in lines["slack-signing"]
    code, out, _ = lockgate(capsys, monkeypatch, "secrets", "check", *on)
    assert code == 1 and "slack-signing:" in out and "slack-bot:" not in out
    # When the config names it where the template allows, and it is stored, it checks out
    config.write_text(base + SLACK.format(signing="lockgate/slack/signing"), encoding="utf-8")
    assert lockgate(capsys, monkeypatch, "secrets", "set", "slack-signing", *on, stdin="8f74" * 8)[0] == 0
    assert stored(stack, "lockgate/slack/signing") == "8f74" * 8
    code, out, _ = lockgate(capsys, monkeypatch, "secrets", "check", *on)
    assert "slack-signing:" not in out and "slack-bot:" not in out


def test_without_slack_approvals_its_secrets_are_not_offered(
    stack: Harness, capsys: Any, monkeypatch: Any
) -> None:
    code, _, err = lockgate(
        capsys, monkeypatch, "secrets", "set", "slack-bot", "--stack", "lockgate", stdin="x"
    )
    assert code == 2 and err.startswith("lockgate: no source 'slack-bot' in lockgate.toml; choose one of")
    assert "Traceback" not in err
