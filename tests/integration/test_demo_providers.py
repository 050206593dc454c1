"""The demo end to end on each model provider, against the stub: same decisions, same ledger, each
run's dollars from its provider's prices (the real SDK clients; Bedrock's and Claude Platform on
AWS's wire formats, SigV4 headers from moto's dummy credentials)."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import pytest

from lockgate_infra.local.demo import run_demo
from lockgate_infra.stub import server

ROOT = Path(__file__).resolve().parents[2]
# The Bedrock prices are a test's own: Lockgate ships none (docs/providers.md, "Cost"), and
# `--provider bedrock` prices at a stand-in only what the config does not. These are the list
# prices × 1.1, given as a deployment gives its own; the Bedrock ids are `--provider bedrock`'s.
BEDROCK_PRICES = {
    "claude-sonnet-5-5": (2.2, 11.0, 0.11),
    "claude-haiku-5-5": (0.11, 0.55, 0.011),
    "claude-haiku-4-5": (1.1, 5.5, 0.11),
}
RUN_COST = re.compile(r"^  (\S+): completed, (\d+) model calls, \$([0-9.]+)$", re.MULTILINE)


def demo(provider: str | None, monkeypatch: pytest.MonkeyPatch) -> tuple[str, list[str]]:
    """`lockgate demo --provider PROVIDER`'s output (None: lockgate.toml's own), and the stub's wire log."""
    config = ROOT / "lockgate.toml"
    if provider == "bedrock":
        priced = config.with_name(".lockgate-demo-bedrock-prices.toml")  # beside it: its stages/ too
        priced.write_text(
            config.read_text(encoding="utf-8")
            + "".join(
                f'\n[models."{model}".bedrock]\ninput = {i}\noutput = {o}\ncache_read = {c}\n'
                for model, (i, o, c) in BEDROCK_PRICES.items()
            ),
            encoding="utf-8",
        )
        config = priced
    stubs: list[Any] = []
    start = server.StubAnthropic.start
    monkeypatch.setattr(server.StubAnthropic, "start", lambda self: stubs.append(self) or start(self))
    out = io.StringIO()
    try:
        code = run_demo(config_path=config, out=out, model="demo", provider=provider)
    finally:
        if config.name != "lockgate.toml":
            config.unlink()
    assert code == 0, out.getvalue()
    return out.getvalue(), [wire for stub in stubs for wire in stub.wire]


def provider_line(text: str) -> str:
    """The line a demo run with --provider adds under the model's."""
    return next(line + "\n" for line in text.splitlines() if line.startswith("Model provider: "))


def decisions(text: str) -> str:
    """The output without what differs by run (ports, link nonces and signatures) or by price."""
    text = re.sub(r"127\.0\.0\.1:\d+", "HOST", text)
    text = re.sub(r"(ap_)[0-9a-f]+|([?&](?:e|n|s)=)[^&\s]+", r"\1\2", text)
    return RUN_COST.sub(r"  \1: completed, \2 model calls", text)


@pytest.mark.slow
@pytest.mark.parametrize("provider", ["bedrock", "aws"])
def test_given_an_aws_provider_when_the_demo_runs_then_it_decides_the_same_and_prices_per_provider(
    provider: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the demo on Anthropic's API and on the AWS provider, each against its own stub
    direct, direct_wire = demo(None, monkeypatch)
    other, other_wire = demo(provider, monkeypatch)
    # Then every request went over that provider's wire format
    assert set(direct_wire) == {"anthropic"} and set(other_wire) == {provider}
    assert len(direct_wire) == len(other_wire)
    # and every reply, decision, approval and ledger outcome is the same
    assert decisions(other).replace(provider_line(other), "") == decisions(direct)
    # and each run is priced at its provider's rates: Bedrock's (× 1.1 here), Claude Platform
    # on AWS's (Anthropic's standard rates)
    factor = 1.1 if provider == "bedrock" else 1.0
    runs = {run: float(usd) for run, _, usd in RUN_COST.findall(direct)}
    priced = {run: float(usd) for run, _, usd in RUN_COST.findall(other)}
    assert runs and priced.keys() == runs.keys()
    for run, usd in runs.items():
        assert priced[run] == pytest.approx(usd * factor, abs=0.00011), run
