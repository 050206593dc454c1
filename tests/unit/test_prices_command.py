"""`lockgate prices`: each configured model on each provider with source and date; `lockgate check`'s
warnings about a model without a price where the deployment calls it, or a price read too long ago."""

from __future__ import annotations

import argparse
import datetime as dt
import io
import json
from pathlib import Path

import pytest

from lockgate.model import published_prices as published
from lockgate_infra.cli import main as cli
from lockgate_infra.cli.check import run_check
from tests.unit.test_check import packages_of, repository  # noqa: F401 - the fixture

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_MODELS = {"claude-haiku-4-5", "claude-haiku-5-5", "claude-sonnet-5-5"}


def bedrock_config(tmp_path: Path, bedrock_id: str) -> Path:
    """The example's lockgate.toml on Bedrock, Sonnet 5.5 behind ``bedrock_id``, nothing priced by hand."""
    config = tmp_path / "lockgate.toml"
    text = (
        (ROOT / "lockgate.toml").read_text(encoding="utf-8").replace('[provider]\nname = "anthropic"\n', "")
    )
    ids = "".join(
        f'"{m}" = "us.anthropic.{m}-v1:0"\n' for m in sorted(EXAMPLE_MODELS - {"claude-sonnet-5-5"})
    )
    provider = (
        f'[provider]\nname = "bedrock"\n[provider.bedrock_models]\n"claude-sonnet-5-5" = "{bedrock_id}"\n'
    )
    config.write_text(f"{text}\n{provider}{ids}", encoding="utf-8")
    return config


def test_given_the_example_then_each_model_is_listed_on_every_provider_with_source_and_date(capsys) -> None:
    # When `lockgate prices --json` runs on the shipped config
    code = cli.main(["prices", "--json"])
    rows = json.loads(capsys.readouterr().out)
    # Then every model the example's tasks call is on each of the four, with the library as source
    assert code == 0
    assert {r["model"] for r in rows} == EXAMPLE_MODELS
    assert len(rows) == 4 * len(EXAMPLE_MODELS)
    for row in rows:
        assert row["source"].startswith(f"{published.LIBRARY} {published.LIBRARY_VERSION}") or row[
            "source"
        ].startswith("Anthropic's standard rates")
        assert row["as_of"] == published.READ_ON
    # And the deployment's own (Anthropic's API) is the one marked in use
    assert {r["provider"] for r in rows if r["in_use"]} == {"anthropic"}
    sonnet = {r["provider"]: r for r in rows if r["model"] == "claude-sonnet-5-5"}
    assert (sonnet["bedrock-global"]["input"], sonnet["bedrock-regional"]["input"]) == (2.0, 2.2)


def test_the_table_marks_what_a_bedrock_deployment_is_charged(tmp_path: Path, capsys) -> None:
    # Given the example on Bedrock, Sonnet through a global inference profile
    config = bedrock_config(tmp_path, "global.anthropic.claude-sonnet-5-5-v1:0")
    # When the table is printed
    code = cli.main(["prices", "--config", str(config)])
    out = capsys.readouterr().out
    # Then Sonnet's global row is the one marked, and the others' regional rows
    marked = [line.split()[0:4] for line in out.splitlines() if " *" in line and line.startswith("claude")]
    assert code == 0
    assert ["claude-sonnet-5-5", "Amazon", "Bedrock,", "global"] in marked
    assert ["claude-haiku-5-5", "Amazon", "Bedrock,", "regional"] in marked
    assert out.splitlines()[0].startswith("USD per million tokens; * what the deployment's calls cost")


def test_given_a_model_nobody_prices_then_prices_exits_1_and_check_warns(
    repository: Path,  # noqa: F811 - the fixture
) -> None:
    # Given the shop's copy with [capacity.models] naming a model no table prices
    packages_of(repository, "shop")
    config = repository / "lockgate.toml"
    text = config.read_text(encoding="utf-8")
    config.write_text(
        text + '\n[capacity.models."claude-haiku-6"]\nrequests_per_minute = 10\n', encoding="utf-8"
    )
    # Then `lockgate prices` exits 1: the worker would not start
    assert cli.main(["prices", "--config", str(config)]) == 1
    # And `lockgate check` still passes the template, with one warning naming what to add
    out, err = io.StringIO(), io.StringIO()
    args = argparse.Namespace(template=repository / "template.yaml", config=None, max_price_age=90)
    code = run_check(args, ROOT, out, err, today=dt.date.fromisoformat(published.READ_ON))
    assert code == 0 and out.getvalue().startswith("ok: ")
    assert err.getvalue() == (
        'warning: model "claude-haiku-6" ([capacity.models]) has no price on Anthropic API: the worker will '
        'not start; give it in lockgate.toml as [models."claude-haiku-6"] (docs/costs.md)\n'
    )


@pytest.mark.parametrize(("days_later", "warned"), [(90, False), (91, True)])
def test_given_prices_read_long_ago_then_check_warns_once_per_model_in_use(
    repository: Path,  # noqa: F811 - the fixture
    days_later: int,
    warned: bool,
) -> None:
    packages_of(repository, "shop")
    today = dt.date.fromisoformat(published.READ_ON) + dt.timedelta(days=days_later)
    err = io.StringIO()
    args = argparse.Namespace(template=repository / "template.yaml", config=None, max_price_age=90)
    assert run_check(args, ROOT, io.StringIO(), err, today=today) == 0
    lines = err.getvalue().splitlines()
    if not warned:
        assert lines == []
        return
    # One per model the shop calls, on the provider it calls it on, saying what to run
    assert len(lines) == 3 and all(f"was read {days_later} days ago" in line for line in lines)
    assert lines[0].endswith("raise genai-prices in pyproject.toml, then make lock and make prices")
