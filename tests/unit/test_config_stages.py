"""A stage's overlay (stages/<stage>.toml) merged over lockgate.toml: what each stage's functions load."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from lockgate.config import load_config, load_receipt_config, merge_tables
from lockgate.errors import ConfigError
from lockgate.settings import ApprovalSettings, JobsSettings, ReceiverSettings, WorkerSettings

ROOT = Path(__file__).resolve().parents[2]
BASE = """
[sources.github]
scheme = "github"
secrets = ["secretsmanager:lockgate/webhooks/github"]

[sources.partner]
scheme = "hmac"
secrets = ["secretsmanager:lockgate/webhooks/partner"]
header = "X-Partner-Signature"

[[approvals.reviewers]]
id = "alice"
name = "Alice"
email = "alice@example.com"
roles = ["refunds"]

[budget]
daily_usd = 20.0
"""


def _config_dir(tmp_path: Path, overlays: dict[str, str]) -> Path:
    (tmp_path / "lockgate.toml").write_text(BASE, encoding="utf-8")
    (tmp_path / "stages").mkdir()
    for stage, text in overlays.items():
        (tmp_path / "stages" / f"{stage}.toml").write_text(text, encoding="utf-8")
    return tmp_path / "lockgate.toml"


def test_given_the_shipped_prod_overlay_then_prod_differs_in_secrets_reviewers_and_budget_only():
    dev, prod = load_config(ROOT / "lockgate.toml", "dev"), load_config(ROOT / "lockgate.toml", "prod")
    assert dev == load_config(ROOT / "lockgate.toml")  # dev has no overlay: lockgate.toml as it is
    assert set(prod.sources) == set(dev.sources)
    for name, source in prod.sources.items():
        assert source.secrets == (f"secretsmanager:lockgate-prod/webhooks/{name}",)
        assert dev.sources[name].secrets == (f"secretsmanager:lockgate/webhooks/{name}",)
        # Everything else about a source is lockgate.toml's.
        assert source.scheme == dev.sources[name].scheme and source.header == dev.sources[name].header
    assert prod.mcp["tickets"].credential == "secretsmanager:lockgate-prod/mcp/tickets"
    assert dev.mcp["tickets"].credential == "secretsmanager:lockgate/mcp/tickets"
    assert replace(prod.mcp["tickets"], credential="") == replace(dev.mcp["tickets"], credential="")
    assert [r.id for r in prod.approvals.reviewers] == ["alice", "carol"]
    assert prod.budget.daily_usd == 100.0 and dev.budget.daily_usd == 20.0
    assert (prod.inbox, prod.capacity, prod.schedules) == (dev.inbox, dev.capacity, dev.schedules)


def test_given_an_overlay_then_tables_merge_and_arrays_replace(tmp_path):
    path = _config_dir(
        tmp_path,
        {
            "staging": """
[sources.github]
secrets = ["secretsmanager:staging/webhooks/github"]

[[approvals.reviewers]]
id = "bob"
name = "Bob"
email = "bob@example.com"
roles = ["refunds"]
"""
        },
    )
    config = load_config(path, "staging")
    assert config.sources["github"].secrets == ("secretsmanager:staging/webhooks/github",)
    assert config.sources["github"].scheme == "github"  # kept from lockgate.toml
    assert config.sources["partner"].secrets == ("secretsmanager:lockgate/webhooks/partner",)
    assert [r.id for r in config.approvals.reviewers] == ["bob"]  # the array replaced whole
    assert config.budget.daily_usd == 20.0
    # A stage without an overlay file runs lockgate.toml as it is.
    assert load_config(path, "dev") == load_config(path)


def test_given_a_bad_overlay_then_the_error_names_both_files(tmp_path):
    path = _config_dir(tmp_path, {"prod": "[sources.github]\nsecret = 'typo'\n", "qa": "not toml ["})
    with pytest.raises(ConfigError, match=r"lockgate\.toml \+ .*stages/prod\.toml.*secret"):
        load_config(path, "prod")
    with pytest.raises(ConfigError, match=r"stages/qa\.toml: not valid TOML"):
        load_config(path, "qa")


@pytest.mark.parametrize("stage", ["../secrets", "Prod", "a/b", "x" * 17, ""])
def test_given_a_stage_that_is_not_a_stage_name_then_no_file_is_read(tmp_path, stage):
    path = _config_dir(tmp_path, {})
    if stage == "":
        assert load_config(path, stage) == load_config(path)  # no stage: no overlay
        return
    with pytest.raises(ConfigError, match="is not a stage name"):
        load_config(path, stage)


def test_given_merge_tables_then_neither_input_is_changed():
    base = {"a": {"b": 1, "c": [1]}, "d": 2}
    overlay = {"a": {"c": [2]}, "e": 3}
    assert merge_tables(base, overlay) == {"a": {"b": 1, "c": [2]}, "d": 2, "e": 3}
    assert base == {"a": {"b": 1, "c": [1]}, "d": 2} and overlay == {"a": {"c": [2]}, "e": 3}


def test_given_lockgate_stage_then_every_function_settings_carries_it():
    environ = {
        "LOCKGATE_STAGE": "prod",
        "INBOX_TABLE": "i",
        "INBOX_QUEUE_URL": "q",
        "INBOX_DLQ_URL": "d",
        "BODY_BUCKET": "b",
        "STATE_TABLE": "s",
        "APPROVALS_TABLE": "a",
        "APPROVAL_LINK_SECRET_ARN": "arn",
    }
    for settings in (ReceiverSettings, WorkerSettings, ApprovalSettings, JobsSettings):
        assert settings.from_env(environ).stage == "prod", settings
        assert settings.from_env({**environ, "LOCKGATE_STAGE": " "}).stage is None, settings


@pytest.mark.parametrize("stage", [None, "dev", "prod"])
def test_given_the_shipped_file_then_the_receiver_reads_the_same_sources_and_inbox_as_every_function(stage):
    # Given the shipped lockgate.toml, per stage
    whole = load_config(ROOT / "lockgate.toml", stage)
    # When the receiver reads only its sections
    receipt = load_receipt_config(ROOT / "lockgate.toml", stage)
    # Then its sources (the stage's secrets included) and inbox limits are the whole file's
    assert (receipt.sources, receipt.inbox) == (whole.sources, whole.inbox)
    assert receipt.source("github") == whole.source("github") and receipt.source("nope") is None


def test_given_a_mistake_in_another_section_then_only_the_receiver_still_loads(tmp_path):
    # Given a file whose [capacity] has an unknown key, and whose sources are fine
    path = tmp_path / "lockgate.toml"
    path.write_text(BASE + "\n[capacity]\ncalls_per_turn = 3\n", encoding="utf-8")
    # Then every function that reads the whole file refuses it, naming the key
    with pytest.raises(ConfigError, match="calls_per_turn"):
        load_config(path)
    # And the receiver still loads its sources, so deliveries are still verified and stored
    assert sorted(load_receipt_config(path).sources) == ["github", "partner"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[sources.github]\nscheme = "gitlab"\nsecrets = ["env:X"]\n', "scheme must be one of"),
        ('[sources.github]\nscheme = "github"\nsecrets = []\n', "non-empty list"),
        ("[inbox]\nmax_attempts = 0\n", "inbox.max_attempts must be a positive whole number"),
        ("[inbox]\nretries = 3\n", r"unknown key\(s\) \['retries'\]"),
        ('sources = "github"\n', r"\[sources\] must be a table"),
        ('[source.github]\nscheme = "github"\nsecrets = ["env:X"]\n', r"unknown section\(s\) \['source'\]"),
    ],
)
def test_given_a_mistake_in_the_receivers_sections_then_the_receiver_refuses_it(tmp_path, text, message):
    path = tmp_path / "lockgate.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=message):
        load_receipt_config(path)
