"""``python -m lockgate_infra.chaos [--seeds N] [--first S] [--events E]``: run seeds, print the table,
exit 1 if any invariant was violated (the violations are listed under the table)."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from lockgate_infra.chaos.run import run_seed, table
from lockgate_infra.workflow_path import first_on_path

ROOT = Path(__file__).resolve().parents[3]  # the checkout: its workflows/ packages run in the world


def main(argv: list[str] | None = None) -> int:
    """Command line."""
    parser = argparse.ArgumentParser(prog="python -m lockgate_infra.chaos", description=__doc__)
    parser.add_argument("--seeds", type=int, default=10, help="how many seeds (default 10)")
    parser.add_argument("--first", type=int, default=1, help="the first seed (default 1)")
    parser.add_argument("--events", type=int, default=20, help="distinct deliveries per seed (default 20)")
    args = parser.parse_args(argv)
    logging.disable(logging.CRITICAL)  # the functions log every injected fault; the table is the output
    rows = []
    with first_on_path(ROOT / "workflows"):  # as the CLI does: make chaos needs no PYTHONPATH
        for seed in range(args.first, args.first + args.seeds):
            rows.append(run_seed(seed, events=args.events))
            print(f"seed {seed}: {len(rows[-1].verdict.violations)} violations", file=sys.stderr, flush=True)
    print(table(rows))
    violations = [(row.seed, v) for row in rows for v in row.verdict.violations]
    for seed, violation in violations:
        print(f"seed {seed}: {violation}")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
