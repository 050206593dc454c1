"""The deployed approval callback on moto and the Slack stand-in, for the approval-input fuzz tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from lockgate_infra.local.devsecrets import SLACK_DEV_SECRETS
from lockgate_infra.local.slack_stub import SlackStub
from tests.fuzz.callback import CONFIG, Callback, environment
from tests.support import Aws
from tests.unit.test_approval_notify import load_approval_app


@pytest.fixture
def callback(aws: Aws, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callback]:
    """The approval handler module as deployed (its environment, API Gateway's events), on moto."""
    config = tmp_path / "lockgate.toml"
    config.write_text(CONFIG, encoding="utf-8")
    aws.client("ses").verify_email_identity(EmailAddress="support@shop.example.com")
    with SlackStub(SLACK_DEV_SECRETS["bot_token"]) as slack:
        for name, value in environment(aws, config, slack).items():
            monkeypatch.setenv(name, value)
        monkeypatch.delenv("APPROVAL_BASE_URL", raising=False)  # deployed, the callback knows its path only
        yield Callback(aws, load_approval_app(), slack)
