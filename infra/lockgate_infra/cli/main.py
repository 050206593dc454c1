"""The `lockgate` command: run the local stack, the demo, and operate the inbox."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lockgate_infra.cli.approvals import add_approvals_parser, run_approvals
from lockgate_infra.cli.check import add_check_parser, run_check
from lockgate_infra.cli.inbox import add_inbox_parsers
from lockgate_infra.cli.jobs import add_jobs_parser, run_jobs
from lockgate_infra.cli.mcp import add_mcp_parser, run_mcp
from lockgate_infra.cli.new import add_new_parser, run_new_workflow
from lockgate_infra.cli.secrets import add_secrets_parser, run_secrets
from lockgate_infra.cli.spend import add_spend_parser
from lockgate_infra.cli.targets import Target, add_target_options, deployed_target, local_target
from lockgate_infra.cli.upgrade import add_upgrade_parser, run_upgrade_indexes
from lockgate_infra.cost.report import add_cost_parser, run_cost
from lockgate_infra.evals.cli import add_eval_parser, run_eval
from lockgate_infra.failures import COULD_NOT_RUN, INTERRUPTED, LOCAL, explain
from lockgate_infra.local.commands import add_local_commands
from lockgate_infra.options import non_negative_float, port_number
from lockgate_infra.prices.command import add_prices_parser, run_prices
from lockgate_infra.workflow_path import first_on_path

ROOT = Path(__file__).resolve().parents[3]


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the process exit code (0 ok, 1 check failed, 2 could not run, 130 interrupted)."""
    args = _parser().parse_args(argv)
    try:
        with first_on_path(ROOT / "workflows"):  # a command may import your workflows packages
            return int(args.run(args))
    except KeyboardInterrupt:
        print("lockgate: interrupted", file=sys.stderr)
        return INTERRUPTED
    except Exception as exc:  # noqa: BLE001 - the one place errors become a line and an exit code
        if getattr(args, "debug", False):
            raise
        where = f"stack {args.stack}" if getattr(args, "stack", None) else LOCAL
        print(f"lockgate: {explain(exc, where)}", file=sys.stderr)
        return COULD_NOT_RUN


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lockgate", description=__doc__)
    parser.add_argument("--version", action="version", version=f"lockgate {_version()}")
    parser.add_argument("--debug", action="store_true", help="show the traceback of an unexpected error")
    commands = parser.add_subparsers(dest="command", required=True)
    _add_local_parsers(commands)
    targeted = add_inbox_parsers(commands, target=_target)
    iam = commands.add_parser(
        "iam-report", help="each function's permissions (resource × actions) from the translated template"
    )
    iam.add_argument("--template", type=Path, default=ROOT / "template.yaml")
    iam.add_argument(
        "--provider",
        choices=("anthropic", "bedrock", "aws"),
        default="anthropic",
        help="as deployed with this ModelProvider (default anthropic)",
    )
    iam.set_defaults(run=_iam_report)
    arns = commands.add_parser(
        "provider-arns",
        help="the BedrockModelArns parameter for lockgate.toml's [provider.bedrock_models]",
    )
    arns.add_argument("--account", required=True, help="the AWS account id the stack deploys to")
    arns.add_argument("--region", required=True, help="the stack's region (unless [provider] region says)")
    arns.add_argument("--config", type=Path, default=ROOT / "lockgate.toml")
    arns.add_argument("--stage", default=None, help="merge stages/STAGE.toml over the config")
    arns.set_defaults(run=_provider_arns)
    add_check_parser(commands, run=lambda args: run_check(args, ROOT))
    add_new_parser(commands, run=lambda args: run_new_workflow(args, ROOT))
    approvals = add_approvals_parser(commands, default_config=ROOT / "lockgate.toml", run=_approvals)
    spend = add_spend_parser(commands, run=_spend)
    add_eval_parser(commands, run=run_eval)
    add_cost_parser(commands, run=run_cost)
    add_prices_parser(commands, run=lambda args: run_prices(args, ROOT, sys.stdout))
    jobs = add_jobs_parser(commands, run=_jobs)
    secrets = add_secrets_parser(commands, run=_secrets)
    upgrade = add_upgrade_parser(commands, run=lambda args: run_upgrade_indexes(args, _target(args)))
    mcp = add_mcp_parser(
        commands,
        run=lambda args: run_mcp(args, lambda: _target(args), sys.stdout),
        default_config=ROOT / "lockgate.toml",
    )
    for sub in (*targeted, *approvals, spend, *jobs, *secrets, upgrade, *mcp):
        add_target_options(sub)
    return parser


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("lockgate-app")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "(not installed)"


def _add_local_parsers(commands: Any) -> None:
    """``lockgate local`` and ``lockgate demo``."""
    local = commands.add_parser(
        "local",
        help="run the embedded stack in the foreground",
        description="With no COMMAND: run the embedded stack in the foreground until Ctrl-C. "
        "The commands talk to a stack that runs (in another terminal).",
    )
    local.add_argument("--config", type=Path, default=ROOT / "lockgate.toml", help="lockgate.toml to use")
    local.add_argument(
        "--port", type=port_number, default=8787, help="gateway port on 127.0.0.1 (default 8787)"
    )
    local.add_argument(
        "--model",
        action="append",
        default=None,
        metavar="MODEL",
        help="the agent's model: demo (the offline demo model, the default, with each other "
        "configured workflow's own NAME.model:scripted_model), gullible (the gullible test model), "
        "claude (real Claude, the default when ANTHROPIC_API_KEY is set), or your own offline model "
        "as package.module:factory; give several offline ones (--model gullible --model "
        "triage.model:scripted_model) and each task gets the first written for it",
    )
    _stand_in_option(local)
    local.add_argument(
        "--clock-speed",
        type=non_negative_float,
        default=1.0,
        metavar="N",
        help="run the template's schedules N times faster than real time (1440: a day in a minute; "
        "0: no schedules)",
    )
    local.add_argument(
        "--verbose",
        action="store_true",
        help="show the functions' JSON logs and metric blobs on the console too "
        "(they always go to .lockgate/local-<port>.log)",
    )
    _provider_option(local)
    local.set_defaults(run=_run_local)
    add_local_commands(
        local,
        status=_local_status,
        slack_messages=_slack_messages,
        slack_click=_slack_click,
        slack_edit=_slack_edit,
    )
    demo = commands.add_parser("demo", help="run signed sample deliveries through a fresh local stack")
    demo.add_argument("--config", type=Path, default=ROOT / "lockgate.toml")
    demo.add_argument(
        "--model",
        choices=("demo", "gullible", "claude"),
        default=None,
        help="default: the offline demo model, or Claude when ANTHROPIC_API_KEY is set",
    )
    _provider_option(demo)
    demo.set_defaults(run=_run_demo)


def _stand_in_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--stand-in",
        action="append",
        default=None,
        metavar="VARIABLE=package.module:factory",
        help="play an outside API on loopback: the factory returns a stand-in server (a "
        "lockgate_infra.testing.RecordingApi, or an MCP server such as lockgate_infra.mcp_example's "
        "McpExample), VARIABLE is set to its URL in every function's environment (replacing a "
        "workflow's own stand-in for it), and each call it records is printed; repeat for several",
    )


def _provider_option(parser: argparse.ArgumentParser) -> None:
    # Checked when the command runs (provider_config), so a wrong name is one line, not a usage.
    parser.add_argument(
        "--provider",
        metavar="NAME",
        default=None,
        help="the model calls' wire format, answered by the local stub: bedrock (Amazon Bedrock, "
        "SigV4), aws (Claude Platform on AWS, SigV4) or anthropic (the API key); default: "
        "lockgate.toml's [provider] (docs/providers.md)",
    )


def _target(args: argparse.Namespace) -> Target:
    if args.stack:
        # samconfig.toml as `sam deploy` reads it: the current folder's, else this checkout's.
        samconfig = Path("samconfig.toml")
        samconfig = samconfig if samconfig.is_file() else ROOT / "samconfig.toml"
        return deployed_target(args.stack, args.region, args.profile, samconfig)
    return _local(args)


def _local(args: argparse.Namespace) -> Target:
    # LOCKGATE_LOCAL_PORT: a terminal (or a test process) that works with one of several local stacks.
    port = args.local_port or int(os.environ.get("LOCKGATE_LOCAL_PORT") or 0) or None
    return local_target(ROOT, port)


def _spend(args: argparse.Namespace) -> int:
    from lockgate_infra.cli.spend import as_json, render, spend_rows

    target = _target(args)
    rows = spend_rows(target.client("dynamodb"), target.name("StateTable"), time.time(), args.days)
    print(as_json(rows) if args.json else render(rows))
    return 0


def _secrets(args: argparse.Namespace) -> int:
    return run_secrets(args, _target(args), ROOT)


def _approvals(args: argparse.Namespace) -> int:
    target = _target(args)
    if target.endpoint_url is not None:  # the local stack: a decision's span joins its spans file
        from lockgate_infra.local.spans import install, spans_file

        install(spans_file(ROOT))
    return run_approvals(args, target)


def _jobs(args: argparse.Namespace) -> int:
    return run_jobs(args, _target(args), ROOT)


def _run_local(args: argparse.Namespace) -> int:
    from lockgate_infra.local.run import run_local

    return run_local(
        config_path=args.config,
        port=args.port,
        model=args.model,
        clock_speed=args.clock_speed or None,
        verbose=args.verbose,
        provider=args.provider,
        stand_ins=args.stand_in or (),
    )


def _local_status(args: argparse.Namespace) -> int:
    from lockgate_infra.local.status_text import report

    return report(_local(args).state or {}, sys.stdout, as_json=args.json)


def _slack_messages(args: argparse.Namespace) -> int:
    from lockgate_infra.local.slack_click import messages

    return messages(_local(args).state or {}, sys.stdout)


def _slack_click(args: argparse.Namespace) -> int:
    from lockgate_infra.local.slack_click import click

    target = _local(args)
    return click(target.state or {}, target.client("secretsmanager"), args.action_id, args.value, args.user,
                 sys.stdout, team=args.team)  # fmt: skip


def _slack_edit(args: argparse.Namespace) -> int:
    from lockgate_infra.local.slack_click import edit

    target = _local(args)
    return edit(target.state or {}, target.client("secretsmanager"), args.value, args.changes, args.user,
                sys.stdout, team=args.team)  # fmt: skip


def _run_demo(args: argparse.Namespace) -> int:
    from lockgate_infra.local.demo import run_demo

    return int(run_demo(config_path=args.config, model=args.model, provider=args.provider))


def _iam_report(args: argparse.Namespace) -> int:
    from lockgate_infra.cli.iam import report, translate_file

    print(report(translate_file(args.template), args.provider))
    return 0


def _provider_arns(args: argparse.Namespace) -> int:
    from lockgate.config import load_config
    from lockgate_infra.cli.provider_arns import bedrock_arns

    provider = load_config(args.config, args.stage).provider
    print("BedrockModelArns=" + ",".join(bedrock_arns(provider, args.account, args.region)))
    return 0
