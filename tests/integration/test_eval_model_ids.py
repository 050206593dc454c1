"""`lockgate eval` refuses a model or judge id without a price before it runs anything (exit 2)."""

from __future__ import annotations

import pytest

from lockgate_infra.cli.main import main

HOW = 'has no price: use a known id, or give its prices in lockgate.toml as [models."claude-haiku-6"]'


def test_a_stub_priced_as_an_unknown_id_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    # When the shop stub is asked to answer as (and be priced as) the id
    code = main(
        ["eval", "support-inbox", "--model", "shop@claude-haiku-6-latest", "--runs", "1", "--no-save"]
    )
    # Then the eval could not run, and the one line says which option, which id and what to do
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith(
        f'lockgate: --model shop@claude-haiku-6-latest: model "claude-haiku-6-latest" {HOW}'
    )


def test_an_unknown_judge_id_is_refused_before_the_api_key_is_asked_for(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    code = main(["eval", "support-inbox", "--judge", "claude-haiku-6-latest", "--runs", "1", "--no-save"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith(f'lockgate: --judge: model "claude-haiku-6-latest" {HOW}')
