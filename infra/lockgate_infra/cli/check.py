"""``lockgate check``: what the workflows declare (their ``RESOURCES``) against ``template.yaml``.

It prints one line per finding (``lockgate_infra.cli.template_check``): a declared resource the
template lacks, a variable a function does not set, an action a role does not allow, an action a
role allows on a declared resource that no workflow declares, a package a function does not ship;
then each approval rule in lockgate.toml that cannot hold for the tasks' tools (``rule_findings``),
and each ``[mcp.servers]`` tool a workflow using the server has not pinned (``mcp_findings``).
When they pass, a warning (on stderr) for each ``[mcp.servers]`` section no workflow uses, each
configured model without a price where the deployment calls it, and each price read longer ago than
``--max-price-age`` days (``lockgate prices`` shows them all).
Exit codes: 0 nothing missing or broader (warnings or not); 1 findings; 2 it could not run (a
template or config it cannot read, a workflows package that cannot be imported, a malformed
declaration).
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

from lockgate.config import load_config
from lockgate.declared import Resource
from lockgate.workflows import declared_resources
from lockgate_infra.failures import FAILED, OK
from lockgate_infra.options import positive_int
from lockgate_infra.prices.command import DEFAULT_MAX_AGE_DAYS, configured_models, price_rows, warnings
from lockgate_infra.workflow_path import first_on_path


def add_check_parser(commands: Any, run: Callable[[argparse.Namespace], int]) -> argparse.ArgumentParser:
    """``lockgate check``."""
    check: argparse.ArgumentParser = commands.add_parser(
        "check",
        help="compare what the workflows declare (RESOURCES) with template.yaml; one line per finding",
        description=(
            "For each workflows package in lockgate.toml, read its RESOURCES and compare them with "
            "template.yaml: each resource is defined, the worker and the scheduled jobs set its "
            "variable, their roles allow each declared action and no other on it, and the functions "
            "that import workflows ship the package; then that each approval rule in lockgate.toml "
            "can hold for the tasks' tools, and that each MCP tool configured for a server a workflow "
            "uses is pinned. When they are, a warning line (stderr) for each [mcp.servers] section no "
            "workflow uses, and each configured model without a price where the deployment calls it, "
            "or with one read longer ago than --max-price-age days. "
            "Exit 0 when nothing is missing or broader (warnings or not), 1 with one line per finding, "
            "2 when it cannot run."
        ),
    )
    check.add_argument(
        "--template",
        type=Path,
        default=None,
        help="the template to read (default: template.yaml in the current folder, else this checkout's); "
        "its folder's workflows/ is where the packages are imported from first",
    )
    check.add_argument(
        "--config", type=Path, default=None, help="lockgate.toml (default: the one beside the template)"
    )
    check.add_argument(
        "--max-price-age",
        type=positive_int,
        default=DEFAULT_MAX_AGE_DAYS,
        metavar="DAYS",
        help=f"warn about a model price read longer ago than this (default {DEFAULT_MAX_AGE_DAYS})",
    )
    check.set_defaults(run=run)
    return check


def run_check(
    args: argparse.Namespace,
    root: Path,
    out: TextIO | None = None,
    err: TextIO | None = None,
    today: dt.date | None = None,
) -> int:
    """Print each finding (or one line saying there are none); FAILED when there are findings.

    Once the template passes, a warning on ``err`` for each model price that is missing or old.
    """
    out = out or sys.stdout
    from lockgate_infra.cli.iam import translate
    from lockgate_infra.cli.template_check import Finding, check_packaging, check_template
    from lockgate_infra.local.template import load_template

    here = Path("template.yaml")
    template = args.template or (here if here.is_file() else root / "template.yaml")
    sam_template = load_template(template)
    config = load_config(args.config or template.parent / "lockgate.toml")
    packages = config.workflows.packages
    declared = declarations(packages, template.parent / "workflows")
    findings: list[Finding | str] = [*check_template(translate(sam_template), declared)]
    findings += check_packaging(sam_template, template.parent, packages)
    unused: list[str] = []
    if not findings and packages:  # the approval rules against the tasks' tools, as the worker reads them
        from lockgate.approvals.rule_checks import rule_findings
        from lockgate_infra.cli.mcp_findings import mcp_findings, unused_servers
        from lockgate_infra.evals.registration import dry_registration

        setup = dry_registration(template.parent, packages, config.mcp)
        findings += rule_findings(config.approvals, setup.tasks)
        with first_on_path(template.parent / "workflows"):
            findings += mcp_findings(config.mcp, setup.mcp_users())
        unused = unused_servers(config.mcp, setup.mcp_users())
    for finding in findings:
        print(finding, file=out)
    if findings:
        return FAILED
    # The tasks' models, registered with the worker's environment as the (passing) template sets it.
    models = configured_models(template.parent, config)
    rows = price_rows(config, models)
    for warning in unused + warnings(rows, models, today or dt.date.today(), args.max_price_age):
        print(warning, file=err or sys.stderr)
    count = sum(len(resources) for resources in declared.values())
    if packages:
        named = ", ".join(packages)
        print(f"ok: {template.name} gives each workflow ({named}) its {count} declared resources", file=out)
    else:
        print(
            "ok: lockgate.toml lists no workflows ([workflows] packages), so there is nothing to compare",
            file=out,
        )
    return OK


def declarations(packages: Sequence[str], folder: Path) -> dict[str, tuple[Resource, ...]]:
    """Each package's ``RESOURCES``, imported from ``folder`` first (your fork's workflows/)."""
    with first_on_path(folder):
        return {package: declared_resources(package) for package in packages}
