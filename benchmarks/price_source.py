"""Where model prices are read: the generated table (build time) vs genai-prices in the worker (run time).

Side by side, what each costs the agent worker: cold-start time and package size. Each sample is a
fresh process with the template's worker environment (as ``benchmarks.worker_start``): the
worker's init (``import app``, which builds the price table from the committed
``lockgate/model/published_prices.py``), then what pricing from the library at run time would add
(``import genai_prices``, its data snapshot, one ``calc_price``). The table's own share of the
init is its import after ``lockgate.model.rates``, in another fresh process. Bytecode is compiled
first, as a build that ships ``.pyc`` files; sizes are the source files a package would ship
(the library's one dependency not already in the worker, none: ``httpx2`` comes with ``anthropic``).

Run: ``python -m benchmarks.price_source [--runs 7]``. The decision it backs: build time
(``make prices``), docs/costs.md "Model prices".
"""

from __future__ import annotations

import argparse
import compileall
import statistics
import sys
import tempfile
from pathlib import Path

from benchmarks.worker_start import LAYER_DIR, environment, run_child

MARKER = "PRICE-SOURCE "
WORKER = f"""
import importlib, json, sys, time
sys.path[:0] = sys.argv[1:]
started = time.perf_counter()
importlib.import_module("app")
init = time.perf_counter() - started
started = time.perf_counter()
from genai_prices import Usage, calc_price, data_snapshot
data_snapshot.get_snapshot()
calc_price(Usage(input_tokens=1000, output_tokens=100), "claude-sonnet-5-5", provider_id="anthropic")
library = time.perf_counter() - started
print({MARKER!r} + json.dumps({{"init": init, "library": library}}))
"""
TABLE = f"""
import json, sys, time
sys.path[:0] = sys.argv[1:]
import lockgate.model.rates
started = time.perf_counter()
import lockgate.model.published_prices
print({MARKER!r} + json.dumps({{"table": time.perf_counter() - started}}))
"""


def _run(script: str, bytecode: bool = True) -> dict[str, float]:
    env = environment(False)
    if not bytecode:  # an empty cache nothing is written to: every module compiled as it is imported
        env = {**env, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": tempfile.mkdtemp()}
    return run_child(script, env, MARKER, timeout=180)


def source_bytes(folder: Path) -> int:
    """Bytes of the ``.py`` files a package ships (no caches)."""
    return sum(p.stat().st_size for p in folder.rglob("*.py") if "__pycache__" not in p.parts)


def measure(runs: int = 7) -> dict[str, float]:
    """Median seconds of each part over ``runs`` fresh processes each, and the sizes in bytes."""
    import genai_prices

    library = Path(genai_prices.__file__).parent
    table = LAYER_DIR / "lockgate" / "model" / "published_prices.py"
    for folder in (library, LAYER_DIR / "lockgate"):
        compileall.compile_dir(str(folder), quiet=1)
    workers = [_run(WORKER) for _ in range(runs)]
    tables = [_run(TABLE) for _ in range(runs)]
    sources = [_run(WORKER, bytecode=False) for _ in range(runs)]
    table_sources = [_run(TABLE, bytecode=False) for _ in range(runs)]
    return {
        "init": statistics.median(s["init"] for s in workers),
        "library": statistics.median(s["library"] for s in workers),
        "table": statistics.median(s["table"] for s in tables),
        "init_sources": statistics.median(s["init"] for s in sources),
        "library_sources": statistics.median(s["library"] for s in sources),
        "table_sources": statistics.median(s["table"] for s in table_sources),
        "table_bytes": table.stat().st_size,
        "library_bytes": source_bytes(library),
    }


def render(found: dict[str, float]) -> str:
    """The side-by-side table and the ratios."""
    rows = [
        "| prices read | bytecode | worker init | pricing's share of it | shipped |",
        "|---|---|---|---|---|",
    ]
    ratios = []
    for suffix, bytecode in (("", "compiled"), ("_sources", "none (compiled at start)")):
        init, table = found[f"init{suffix}"] * 1000, found[f"table{suffix}"] * 1000
        library = found[f"library{suffix}"] * 1000
        rows += [
            f"| at build time (the generated table, as shipped) | {bytecode} | {init:.0f} ms "
            f"| {table:.1f} ms | {found['table_bytes'] / 1024:.0f} KB |",
            f"| at run time (genai-prices in the worker) | {bytecode} | {init + library:.0f} ms | "
            f"{library:.0f} ms | {found['library_bytes'] / 1024:.0f} KB |",
        ]
        ratios.append(f"× {(init + library) / init:.2f} ({bytecode})")
    package = found["library_bytes"] / found["table_bytes"]
    return "\n".join(
        [*rows, "", f"Run time / build time: cold start {', '.join(ratios)}; package × {package:.0f}"]
    )


def main(argv: list[str] | None = None) -> int:
    """Command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    print(render(measure(parser.parse_args(argv).runs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
