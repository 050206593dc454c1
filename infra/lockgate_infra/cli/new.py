"""``lockgate new workflow NAME --source SOURCE --event EVENT``: scaffold your own workflow."""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from lockgate_infra.cli.check import run_check
from lockgate_infra.cli.scaffold import ScaffoldError, plan_workflow
from lockgate_infra.cli.template_edits import TemplateEditError
from lockgate_infra.failures import CommandError
from lockgate_infra.prices.command import DEFAULT_MAX_AGE_DAYS


def add_new_parser(commands: Any, run: Callable[[argparse.Namespace], int]) -> None:
    """``lockgate new workflow``."""
    new = commands.add_parser("new", help="scaffold something of your own (a workflow)")
    kinds = new.add_subparsers(dest="kind", required=True)
    workflow = kinds.add_parser(
        "workflow",
        help="a workflow package beside the shop: task, tools, scripted model, evals, test, wiring",
        description=(
            "Write workflows/NAME/ (a task on SOURCE's EVENT events with three tools: one that reads "
            "untrusted text, one that runs at once, one that needs a person; a scripted model, two "
            "sample deliveries in the provider's own shape, and an eval file), "
            "tests/workflows/test_NAME.py, and the wiring: NAME in lockgate.toml's "
            "[workflows] packages, linked into the functions that load workflows, and its table, "
            "variable and IAM statement in template.yaml. Nothing is written if any of it cannot be."
        ),
    )
    workflow.add_argument(
        "name", help="the package's name: lowercase letters, digits, underscores (e.g. triage)"
    )
    workflow.add_argument(
        "--source", required=True, help="a source in lockgate.toml's [sources] (e.g. github)"
    )
    workflow.add_argument(
        "--event",
        required=True,
        help="the event type its task runs on, as the provider names it (e.g. issues.opened, "
        "charge.dispute.created, app_mention, command:/ask, orders/create)",
    )
    workflow.set_defaults(run=run)


def run_new_workflow(args: argparse.Namespace, checkout: Path, out: TextIO | None = None) -> int:
    """Scaffold in the current folder if a checkout (template.yaml, lockgate.toml), else ``checkout``."""
    out = out or sys.stdout
    here = Path.cwd()
    root = here if (here / "template.yaml").is_file() and (here / "lockgate.toml").is_file() else checkout
    try:
        scaffold = plan_workflow(root, args.name, args.source, args.event)
    except (ScaffoldError, TemplateEditError) as exc:
        raise CommandError(f"{exc}; nothing was written") from exc
    written = scaffold.write()
    print(f'made workflow {args.name} ({args.source} "{args.event}" events):', file=out)
    for path in written:
        print(f"  {path}", file=out)
    checked = argparse.Namespace(
        template=root / "template.yaml", config=None, max_price_age=DEFAULT_MAX_AGE_DAYS
    )
    print("lockgate check:", file=out, flush=True)
    code = run_check(checked, root, out)
    if root.resolve() == checkout.resolve() and (root / "docs" / "reference").is_dir():
        # The permission matrix (docs/reference/iam.md) now has the new table: regenerate it, as
        # a person would, with the docs site's own command.
        command = [sys.executable, "-m", "lockgate_infra.docsite"]
        subprocess.run(command, cwd=root, check=True, capture_output=True)  # noqa: S603
        print("docs/reference/ regenerated (python -m lockgate_infra.docsite)", file=out)
    task = args.name.replace("_", "-")
    print(
        "next:\n"
        f"  make test        # runs tests/workflows/test_{args.name}.py with the rest\n"
        f"  lockgate local --model {args.name}.model:scripted_model\n"
        f"  lockgate eval {task} --model {args.name}.model:scripted_model --runs 10",
        file=out,
    )
    return code
