"""The eval with real Claude on an AWS provider: the deployment's provider, as its worker calls it.

Here "real Claude" is the stub behind the provider's wire format (``ANTHROPIC_BASE_URL``), and
the credentials are the ones the weekly job hands its child (``lockgate_infra.evals.signing``).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from lockgate.config import load_config
from lockgate.model.sdk import AwsKeys
from lockgate_infra.evals import rig
from lockgate_infra.evals.rig import run_task_evals
from lockgate_infra.evals.signing import as_environment
from lockgate_infra.local.model_provider import provider_config
from lockgate_infra.stub import StubAnthropic
from shop.model import scripted_model

ROOT = Path(__file__).resolve().parents[2]
ROLE = AwsKeys("ASIAEVALROLE", "role-secret", "role-token", "eu-west-1")
CASE = "where is my order"


@pytest.fixture
def bedrock_stage(monkeypatch: pytest.MonkeyPatch) -> list[str | None]:
    """lockgate.toml as a stage on Bedrock loads it; the stages the eval asked for."""
    asked: list[str | None] = []
    with provider_config(ROOT / "lockgate.toml", "bedrock") as wire:

        def on_bedrock(path: Any, stage: str | None = None) -> Any:
            asked.append(stage)
            return load_config(wire.config_path)

        monkeypatch.setattr(rig, "load_config", on_bedrock)
        yield asked


def test_given_a_bedrock_stage_when_the_eval_runs_the_task_model_then_it_invokes_bedrock_signed_by_the_role(
    bedrock_stage: list[str | None],
) -> None:
    # Given the weekly job's child: its stage, the role's credentials under the eval's own names,
    # no model key, and the provider's endpoint (here the stub)
    with StubAnthropic(scripted_model()) as stub:
        environ = {"LOCKGATE_STAGE": "bedrock", "ANTHROPIC_BASE_URL": stub.base_url, **as_environment(ROLE)}
        # When the task's own model answers one case
        report = run_task_evals("support-inbox", model="task", runs=1, only=[CASE], results_dir=None,
                                environ=environ)  # fmt: skip
    # Then it ran, every call was Bedrock's InvokeModel on the task's Bedrock ids, signed with
    # the role's credentials for bedrock in the role's region (not moto's fake ones, not us-east-1)
    assert report.cases and report.cases[0].passes == 1, report.render()
    assert stub.wire and set(stub.wire) == {"bedrock"}
    assert stub.signatures == ["eu-west-1/bedrock"] * len(stub.wire)
    assert "us.anthropic.claude-sonnet-5-5-v1:0" in stub.bedrock_ids  # (its screens call Haiku's)
    assert all(bedrock_id.startswith("us.anthropic.claude-") for bedrock_id in stub.bedrock_ids)
    assert set(bedrock_stage) == {"bedrock"}  # the stage's config, as the worker loads it


def test_given_bedrock_without_the_task_models_id_then_the_eval_refuses_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from lockgate_infra.cli.main import main

    # Given a Bedrock config, priced, that maps no Bedrock id for the shop's model
    with provider_config(ROOT / "lockgate.toml", "bedrock") as wire:
        config = load_config(wire.config_path)
    ids = {k: v for k, v in config.provider.bedrock_models.items() if k != "claude-sonnet-5-5"}
    unmapped = dataclasses.replace(config, provider=dataclasses.replace(config.provider, bedrock_models=ids))
    monkeypatch.setattr(rig, "load_config", lambda path, stage=None: unmapped)
    for name, value in as_environment(ROLE).items():
        monkeypatch.setenv(name, value)
    # When the eval is asked for real Claude, Then it says which setting to add, before any call
    code = main(["eval", "support-inbox", "--model", "task", "--runs", "1", "--only", CASE, "--no-save"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith('lockgate: --model task: model "claude-sonnet-5-5" has no Bedrock id: add it')
