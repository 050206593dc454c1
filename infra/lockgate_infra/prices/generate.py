"""``make prices``: Lockgate's published model prices, read from the pinned ``genai-prices``.

Build time, not run time, by measurement (``benchmarks/price_source.py``): pricing from the library
in the worker adds 117 ms to its cold start with bytecode shipped, 736 ms without (× 1.14 and
× 1.24), and 1.7 MB to its package; the generated table, 0.5 ms and 23 KB. So this reads the
library once and writes ``lockgate/model/published_prices.py``:
each Claude model's prices on each endpoint, with the library's version, the day it was read, the
library's own id for the price and the references the library cites. A test fails when the
committed table and the installed (pinned) library disagree; ``make prices`` after ``make lock``
brings them back together.

Endpoints: ``anthropic`` (Anthropic's API; the library's ``anthropic`` provider), and Amazon
Bedrock's two kinds (its ``aws`` provider): ``bedrock-global`` (``global.`` inference profiles, no
premium) and ``bedrock-regional`` (in-Region model ids and the geographic inference profiles,
``us.``/``eu.``/``apac.``/..., which carry the regional premium). A model is taken when the library
gives its input, output and cache-read prices (prompt caching is how Lockgate calls every model):
that leaves out the retired Claude 1 and 2 on Anthropic's API, and Claude 3 Haiku and Opus on Bedrock.
"""

from __future__ import annotations

import argparse
import datetime as dt
import re
import subprocess
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from lockgate.model.rates import Price

LIBRARY = "genai-prices"
ROOT = Path(__file__).resolve().parents[3]
TARGET = ROOT / "layers" / "core" / "lockgate" / "model" / "published_prices.py"
# Endpoint → (the library's provider id, the prefix of the ids it lists there for that endpoint).
ENDPOINTS: dict[str, tuple[str, str]] = {
    "anthropic": ("anthropic", ""),
    "bedrock-global": ("aws", "global.anthropic."),
    "bedrock-regional": ("aws", "regional.anthropic."),
}
# A library id → Lockgate's family name: no "-latest", no "-0" minor (claude-opus-4-0 is Opus 4),
# no Bedrock date or version suffix (…-20250929-v1:0).
_SUFFIX = re.compile(r"(-latest|(?<=-\d)-0|-\d{8})?(-v\d+:\d+)?$")
_URL = re.compile(r"https?://[^\s)\"',]+")


@dataclass(frozen=True)
class Listed:
    """One model's price on one endpoint as the library lists it: the price, its id there, its references."""

    price: Price
    library_id: str
    refs: tuple[str, ...]
    since: str | None  # the day this price took effect, where the library dates it


def family(library_id: str, prefix: str) -> str:
    """Lockgate's model family for a library id (``regional.anthropic.claude-haiku-4-5-20251001-v1:0``)."""
    return _SUFFIX.sub("", library_id.removeprefix(prefix), count=1)


def read_library(today: dt.date) -> tuple[str, dict[str, dict[str, Listed]]]:
    """The library's version and, per endpoint, each Claude family's listing as of ``today``."""
    from importlib.metadata import version

    from genai_prices.data import providers

    at = dt.datetime.combine(today, dt.time(), dt.UTC)
    by_id = {p.id: p for p in providers}
    tables: dict[str, dict[str, Listed]] = {}
    for endpoint, (provider_id, prefix) in ENDPOINTS.items():
        provider = by_id[provider_id]
        table: dict[str, Listed] = {}
        for model in provider.models:
            if not model.id.startswith(prefix + "claude-"):
                continue
            listed = _listed(model, at, provider.pricing_urls or [])
            if listed is None:
                continue
            name = family(model.id, prefix)
            table[name] = dearer(table[name], listed) if name in table else listed
        tables[endpoint] = dict(sorted(table.items()))
    return version(LIBRARY), tables


def dearer(a: Listed, b: Listed) -> Listed:
    """Of two listings under one family (two Bedrock versions of Claude 3.5 Sonnet), the dearer."""

    def rank(x: Listed) -> tuple[float, float, float]:
        return (x.price.output, x.price.input, x.price.cache_read)

    return a if rank(a) >= rank(b) else b


def _listed(model: Any, at: dt.datetime, pricing_urls: Iterable[str]) -> Listed | None:
    prices = model.get_prices(at)
    values = {k: v for k, v in vars(prices).items() if v is not None}
    if not {"input_mtok", "output_mtok", "cache_read_mtok"} <= values.keys():
        return None
    refs = tuple(dict.fromkeys(u.rstrip(".") for u in _URL.findall(model.price_comments or ""))) or tuple(
        pricing_urls
    )
    return Listed(_price(values), model.id, refs, _since(model, at))


def _price(values: Mapping[str, Any]) -> Price:
    """A library ModelPrice's values as a Price (a tier: the long-prompt rates over its start)."""
    fields = {
        "input": "input_mtok",
        "output": "output_mtok",
        "cache_read": "cache_read_mtok",
        "cache_write_5m": "cache_write_mtok",
        "cache_write_1h": "cache_write_1h_mtok",
    }
    base = {name: _number(values.get(key), tier=None) for name, key in fields.items()}
    starts = {t.start for v in values.values() for t in getattr(v, "tiers", [])}
    if not starts:
        return Price(**base)  # type: ignore[arg-type]
    if len(starts) > 1:
        raise ValueError(f"more than one price tier ({sorted(starts)}): Price holds one")
    over = starts.pop()
    long = {name: _number(values.get(key), tier=over) for name, key in fields.items()}
    return Price(**base, long_prompt_over=over, long_prompt=Price(**long))  # type: ignore[arg-type]


def _number(value: Any, tier: int | None) -> float | None:
    if value is None:
        return None
    if isinstance(value, Decimal):
        return float(value)
    if tier is None:
        return float(value.base)
    return float(next(t.price for t in value.tiers if t.start == tier))


def _since(model: Any, at: dt.datetime) -> str | None:
    if not isinstance(model.prices, list):
        return None
    dated = [c.constraint.start_date for c in model.prices if getattr(c.constraint, "start_date", None)]
    started = [d for d in dated if d <= at.date()]
    return max(started).isoformat() if started else None


def render(library_version: str, read_on: dt.date, tables: Mapping[str, Mapping[str, Listed]]) -> str:
    """The generated module's source (``make prices`` formats it with ruff after)."""
    lines = [
        f'"""Model prices from {LIBRARY} {library_version}: generated by `make prices`; do not edit.',
        "",
        "Per endpoint (``anthropic``, ``bedrock-global``, ``bedrock-regional``), each Claude family's",
        "USD per million tokens, and where the library has it from (``LISTED``: its own id for the price,",
        "the references it cites, the day the price took effect where it dates it). What the library",
        "lacks is ``lockgate.model.pricing``'s, by hand, each with its source.",
        '"""',
        "",
        "from lockgate.model.rates import Price",
        "",
        f'LIBRARY = "{LIBRARY}"',
        f'LIBRARY_VERSION = "{library_version}"',
        f'READ_ON = "{read_on.isoformat()}"  # the day `make prices` read these from the library',
        "",
        "PRICES: dict[str, dict[str, Price]] = {",
    ]
    for endpoint, table in tables.items():
        lines.append(f'    "{endpoint}": {{')
        lines += [f'        "{name}": {_code(listed.price)},' for name, listed in table.items()]
        lines.append("    },")
    lines += ["}", "", "# endpoint → family → (the library's id, its references, in effect since)"]
    lines.append("LISTED: dict[str, dict[str, tuple[str, tuple[str, ...], str | None]]] = {")
    for endpoint, table in tables.items():
        lines.append(f'    "{endpoint}": {{')
        lines += [
            f'        "{name}": ({x.library_id!r}, {x.refs!r}, {x.since!r}),' for name, x in table.items()
        ]
        lines.append("    },")
    lines += ["}", ""]
    return "\n".join(lines)


def _code(price: Price) -> str:
    """``Price(...)`` with only the fields that are set."""
    args = [repr(price.input), repr(price.output), repr(price.cache_read)]
    for name in ("cache_write_5m", "cache_write_1h", "long_prompt_over"):
        if getattr(price, name) is not None:
            args.append(f"{name}={getattr(price, name)!r}")
    if price.long_prompt is not None:
        args.append(f"long_prompt={_code(price.long_prompt)}")
    return f"Price({', '.join(args)})"


def main(argv: list[str] | None = None) -> int:
    """Write the table from the installed library's data, as of today."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=TARGET)
    args = parser.parse_args(argv)
    version, tables = read_library(dt.date.today())
    args.out.write_text(render(version, dt.date.today(), tables))
    ruff = Path(sys.executable).parent / "ruff"
    subprocess.run([str(ruff), "format", "--quiet", str(args.out)], check=True)  # noqa: S603 - our paths
    count = sum(len(t) for t in tables.values())
    print(f"{args.out.name}: {count} prices from {LIBRARY} {version} ({', '.join(tables)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
