"""``python -m lockgate_infra.evals TASK [options]``: ``lockgate eval`` alone, without the rest of the CLI.

The weekly eval job runs this in a child process; the eval function ships only the packages it
imports (``lockgate_infra.evals``, ``stub`` and ``local``), not the operator CLI or the cost meter.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from lockgate.errors import LockgateError
from lockgate_infra.evals.cli import add_eval_parser, run_eval


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``eval``'s own arguments and run it; returns the process exit code."""
    parser = argparse.ArgumentParser(prog="lockgate")
    commands = parser.add_subparsers(dest="command", required=True)
    add_eval_parser(commands, run=run_eval)
    args = parser.parse_args(["eval", *(sys.argv[1:] if argv is None else argv)])
    try:
        return int(args.run(args))
    except LockgateError as exc:
        print(f"lockgate: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
