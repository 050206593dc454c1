"""``lockgate prices``: each configured model's prices on each provider, with source and date.

A configured model is one a task may call (its model, fallback, screen and intake models), a
``[capacity.models]`` key, a ``[models]`` entry or a ``[provider.bedrock_models]`` key. Each is
shown on Anthropic's API, Bedrock's global and regional endpoints and Claude Platform on AWS, with
``[models]`` over the published prices as the worker applies them; ``*`` marks the price the
deployment's calls are charged at. ``lockgate check`` warns from the same rows (``warnings``).
Exit codes: 0 every configured model has a price where the deployment calls it; 1 one has none
(the worker would refuse to start); 2 it could not run.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from lockgate.config import LockgateConfig
from lockgate.model.price_table import PriceTable
from lockgate.model.pricing import BEDROCK_GLOBAL, BEDROCK_REGIONAL, ENDPOINT_TITLES, bedrock_endpoint

DEFAULT_MAX_AGE_DAYS = 90
# The rows per model: (row, its title, the [provider] name it is priced as).
ROWS = (
    ("anthropic", ENDPOINT_TITLES["anthropic"], "anthropic"),
    (BEDROCK_GLOBAL, ENDPOINT_TITLES[BEDROCK_GLOBAL], "bedrock"),
    (BEDROCK_REGIONAL, ENDPOINT_TITLES[BEDROCK_REGIONAL], "bedrock"),
    ("aws", "Claude Platform on AWS", "aws"),
)


@dataclass(frozen=True)
class PriceRow:
    """One model on one provider: its price (None: none), where it comes from, and whether calls use it."""

    model: str
    row: str
    title: str
    in_use: bool
    price: Any  # lockgate.model.rates.Price | None
    source: str
    as_of: str | None

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        p = self.price
        rates = {}
        if p is not None:
            rates = {
                "input": p.input,
                "output": p.output,
                "cache_read": p.cache_read,
                "cache_write_5m": p.cache_write("5m"),
                "cache_write_1h": p.cache_write("1h"),
                "long_prompt_over": p.long_prompt_over,
            }
        return {"model": self.model, "provider": self.row, "in_use": self.in_use, **rates,
                "source": self.source, "as_of": self.as_of}  # fmt: skip


def add_prices_parser(commands: Any, run: Callable[[argparse.Namespace], int]) -> argparse.ArgumentParser:
    """``lockgate prices``."""
    prices: argparse.ArgumentParser = commands.add_parser(
        "prices",
        help="each configured model's prices on each provider, with source and date",
        description=(
            "For each model the tasks, [capacity.models], [models] and [provider.bedrock_models] name: its "
            "prices in USD per million tokens on Anthropic's API, Amazon Bedrock (global and regional "
            "endpoints) and Claude Platform on AWS, with [models] over the published ones; * marks what the "
            "deployment's calls are charged at. Exit 0; 1 when a model has no price where the deployment "
            "calls it; 2 when it cannot run."
        ),
    )
    prices.add_argument("--config", type=Path, default=None, help="lockgate.toml (default: this checkout's)")
    prices.add_argument("--stage", default=None, help="merge stages/STAGE.toml over the config")
    prices.add_argument("--json", action="store_true", help="machine-readable output")
    prices.set_defaults(run=run)
    return prices


def configured_models(root: Path, config: LockgateConfig) -> dict[str, str]:
    """Each model id the deployment names, with the first setting that names it (for messages)."""
    from lockgate_infra.evals.registration import dry_registration

    found: dict[str, str] = {}
    for task in dry_registration(root, config.workflows.packages, config.mcp).tasks:
        for setting, model in task.model_settings():
            found.setdefault(model, f"task {task.name} {setting}")
    for model in config.capacity.models:
        found.setdefault(model, "[capacity.models]")
    for model in config.models:
        found.setdefault(model, "[models]")
    for model in config.provider.bedrock_models:
        found.setdefault(model, "[provider.bedrock_models]")
    return dict(sorted(found.items()))


def price_rows(config: LockgateConfig, models: Mapping[str, str]) -> list[PriceRow]:
    """Every model on every provider, ``[models]`` over the published prices, the deployment's marked."""
    tables = {
        "anthropic": PriceTable.from_config(config.models, "anthropic"),
        BEDROCK_GLOBAL: PriceTable.from_config(config.models, "bedrock", {m: f"global.{m}" for m in models}),
        BEDROCK_REGIONAL: PriceTable.from_config(config.models, "bedrock"),
        "aws": PriceTable.from_config(config.models, "aws"),
    }
    rows = []
    for model in models:
        used = _row_in_use(config, model)
        for row, title, _ in ROWS:
            entry = tables[row].entry(model)
            source = entry.source if entry else "none: give one in lockgate.toml [models]"
            price = entry.price if entry else None
            rows.append(
                PriceRow(model, row, title, row == used, price, source, entry.as_of if entry else None)
            )
    return rows


def _row_in_use(config: LockgateConfig, model: str) -> str:
    provider = config.provider
    if provider.name != "bedrock":
        return provider.name
    return bedrock_endpoint(provider.bedrock_models.get(model, ""))


def warnings(rows: list[PriceRow], models: Mapping[str, str], today: dt.date, max_age_days: int) -> list[str]:
    """``lockgate check``'s lines: a model without a price where it is called; a price older than the age."""
    found = []
    for r in rows:
        if not r.in_use:
            continue
        if r.price is None:
            found.append(
                f'warning: model "{r.model}" ({models[r.model]}) has no price on {r.title}: the worker '
                f'will not start; give it in lockgate.toml as [models."{r.model}"] (docs/costs.md)'
            )
        elif r.as_of is not None and (age := (today - dt.date.fromisoformat(r.as_of)).days) > max_age_days:
            found.append(
                f'warning: the price of "{r.model}" on {r.title} was read {age} days ago ({r.as_of}; over '
                f"{max_age_days}): raise genai-prices in pyproject.toml, then make lock and make prices"
            )
    return found


def render(rows: list[PriceRow], config: LockgateConfig) -> str:
    """A table, one line per model and provider, the rates and where they come from."""
    provider = config.provider.name
    head = f"{'model':<20}{'provider':<36}{'input':>7}{'output':>8}{'c.read':>8}{'c.5m':>8}{'c.1h':>8}"
    lines = [
        f"USD per million tokens; * what the deployment's calls cost ([provider] name = {provider!r})",
        f"{head}  {'as of':<11}source",
    ]
    for r in rows:
        title = f"{r.title}{' *' if r.in_use else ''}"
        p = r.price
        rates = (
            f"{p.input:>7g}{p.output:>8g}{p.cache_read:>8g}{p.cache_write('5m'):>8g}{p.cache_write('1h'):>8g}"
            if p is not None
            else f"{'-':>7}{'-':>8}{'-':>8}{'-':>8}{'-':>8}"
        )
        lines.append(f"{r.model:<20}{title:<36}{rates}  {r.as_of or '':<11}{r.source}")
    return "\n".join(lines)


def run_prices(args: argparse.Namespace, root: Path, out: TextIO) -> int:
    """Print the rows (or JSON); 1 when a model has no price where the deployment calls it."""
    from lockgate.config import load_config

    config = load_config(args.config or root / "lockgate.toml", args.stage)
    models = configured_models(root, config)
    rows = price_rows(config, models)
    if args.json:
        print(json.dumps([r.as_dict() for r in rows], indent=2), file=out)
    else:
        print(render(rows, config), file=out)
    return 1 if any(r.in_use and r.price is None for r in rows) else 0
