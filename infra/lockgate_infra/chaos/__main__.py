"""``python -m lockgate_infra.chaos [--seeds N] [--first S] [--events E] [--mcp]``: run seeds, print the
table, exit 1 if any invariant was violated (the violations are listed under the table). ``--mcp``:
the tickets workflow against the example MCP server under its faults, instead of the helpdesk."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any

from lockgate_infra.chaos.mcp_run import mcp_table, run_mcp_seed
from lockgate_infra.chaos.run import run_seed, table
from lockgate_infra.workflow_path import first_on_path

ROOT = Path(__file__).resolve().parents[3]  # the checkout: its workflows/ packages run in the world


def main(argv: list[str] | None = None) -> int:
    """Command line."""
    parser = argparse.ArgumentParser(prog="python -m lockgate_infra.chaos", description=__doc__)
    parser.add_argument("--seeds", type=int, default=10, help="how many seeds (default 10)")
    parser.add_argument("--first", type=int, default=1, help="the first seed (default 1)")
    parser.add_argument("--events", type=int, default=20, help="distinct deliveries per seed (default 20)")
    parser.add_argument("--mcp", action="store_true", help="the tickets workflow and its MCP server's faults")
    args = parser.parse_args(argv)
    logging.disable(logging.CRITICAL)  # the functions log every injected fault; the table is the output
    run, report = (run_mcp_seed, mcp_table) if args.mcp else (run_seed, table)
    rows: list[Any] = []
    with first_on_path(ROOT / "workflows"):  # as the CLI does: make chaos needs no PYTHONPATH
        for seed in range(args.first, args.first + args.seeds):
            rows.append(run(seed, events=args.events))
            print(f"seed {seed}: {len(rows[-1].verdict.violations)} violations", file=sys.stderr, flush=True)
    print(report(rows))
    violations = [(row.seed, v) for row in rows for v in row.verdict.violations]
    for seed, violation in violations:
        print(f"seed {seed}: {violation}")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
