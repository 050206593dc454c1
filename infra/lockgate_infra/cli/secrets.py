"""`lockgate secrets`: store, list, rotate and check a stack's webhook secrets and its model key.

Values come from stdin or a prompt that does not echo, never from the command line, and are never
printed: only names, references and states are. Rotation keeps both values in the one secret, as a
JSON array (``lockgate.secrets.secret_values``), so the receiver verifies with either while the
provider switches over; lockgate.toml does not change.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from lockgate.errors import ConfigError
from lockgate.secrets import rotation_value, secret_values
from lockgate_infra.cli.stack_secrets import MODEL_KEY, Finding, StackSecrets, checked_value, read_value
from lockgate_infra.cli.targets import Target, TargetError, stack_config

CACHE_NOTE = "receivers pick it up within 5 minutes (their cache)"


def add_secrets_parser(
    commands: Any, *, run: Callable[[argparse.Namespace], int]
) -> list[argparse.ArgumentParser]:
    """`secrets set|list|rotate-in|rotate-out|check`; returned so the caller adds --local/--stack."""
    secrets = commands.add_parser(
        "secrets", help="store, list, rotate and check webhook secrets and the model key"
    )
    actions = secrets.add_subparsers(dest="secrets_command", required=True)
    helps = {
        "set": "store a source's secret, the model key or a Slack approvals secret (stdin or hidden prompt)",
        "list": "every source's secret and the model key: reference, state, last changed (never values)",
        "rotate-in": "add a new secret alongside the current one: deliveries signed with either verify",
        "rotate-out": "keep only the newer secret of a rotation",
        "check": "exit 1 if any secret is missing, empty or unusable, naming which",
    }
    parsers = []
    for action, text in helps.items():
        sub = actions.add_parser(action, help=text, description=text)
        if action in ("set", "rotate-in", "rotate-out"):
            sub.add_argument(
                "name",
                metavar="SOURCE",
                help=f"a [sources.NAME] of lockgate.toml, {MODEL_KEY}, or slack-bot / slack-signing "
                "(with [approvals.slack])",
            )
        sub.add_argument(
            "--config", type=Path, help="lockgate.toml (default: the local stack's, else ./lockgate.toml)"
        )
        sub.set_defaults(run=run)
        parsers.append(sub)
    return parsers


def run_secrets(args: argparse.Namespace, target: Target, root: Path) -> int:
    """Run one `secrets` subcommand against ``target``."""
    secrets = stack_secrets(args, target, root)
    command = args.secrets_command
    if command == "list":
        print(render(secrets))
        return 0
    if command == "check":
        return check(secrets)
    entry = secrets.entry(args.name)
    if command == "set":
        secrets.write(entry, checked_value(entry, read_value(args.name)))
        print(f"stored {entry.ref} for {entry.name} (value not shown); {CACHE_NOTE}")
        return 0
    if entry.source is None:
        raise ConfigError(
            f"{MODEL_KEY} needs no overlap: store the new key with `lockgate secrets set {MODEL_KEY}`"
        )
    current = secrets.read(entry)
    values = secret_values(current) if current and current.strip() else []
    if command == "rotate-in":
        if len(values) != 1:
            raise ConfigError(_cannot_rotate_in(entry.name, values))
        new = checked_value(entry, read_value(args.name))
        if new == values[0]:
            raise ConfigError(f"{entry.name}: that is the current secret; give the new one")
        secrets.write(entry, rotation_value([values[0], new]))
        print(
            f"{entry.name} now verifies with the current and the new secret; {CACHE_NOTE}. Then switch the "
            f"provider to the new secret and run `lockgate secrets rotate-out {entry.name}`"
        )
        return 0
    if len(values) < 2:
        raise ConfigError(
            f"{entry.name} is not rotating (start with `lockgate secrets rotate-in {entry.name}`)"
        )
    secrets.write(entry, values[-1])
    print(f"{entry.name} now verifies with the new secret only; {CACHE_NOTE}")
    return 0


def _cannot_rotate_in(name: str, values: list[str]) -> str:
    if not values:
        return f"{name} has no secret to rotate from; store one with `lockgate secrets set {name}`"
    return f"{name} is already rotating; finish with `lockgate secrets rotate-out {name}` first"


def stack_secrets(args: argparse.Namespace, target: Target, root: Path) -> StackSecrets:
    """The secrets of ``--stack NAME`` (its functions' environments from Lambda) or of the local stack."""
    if args.stack:
        return StackSecrets(
            target.client("secretsmanager"),
            stack_config(target, root, args.config),
            _deployed_environment(target),
        )
    return StackSecrets(target.client("secretsmanager"), stack_config(target, root, args.config), None)


def _deployed_environment(target: Target) -> Callable[[str], Mapping[str, str]]:
    lambda_client = target.client("lambda")

    def environment(logical_id: str) -> Mapping[str, str]:
        try:
            found = lambda_client.get_function_configuration(FunctionName=target.name(logical_id))
        except Exception as exc:  # noqa: BLE001 - any failure means we cannot tell what the function reads
            raise TargetError(f"cannot read {logical_id}'s configuration ({type(exc).__name__})") from exc
        return dict(found.get("Environment", {}).get("Variables", {}))

    return environment


def render(secrets: StackSecrets) -> str:
    """One line per secret: name, reference, state (and why), last changed."""
    rows = [("NAME", "REFERENCE", "STATE", "LAST CHANGED")]
    for finding in map(secrets.inspect, secrets.entries()):
        rows.append((finding.entry.name, finding.entry.ref, _state(finding), finding.changed))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row[:3], widths, strict=True)) + "  " + row[3]
        for row in rows
    )


def _state(finding: Finding) -> str:
    return f"{finding.state} ({finding.detail})" if finding.detail else finding.state


def check(secrets: StackSecrets) -> int:
    """0 if every secret is usable; else 1, listing the others."""
    findings = [secrets.inspect(entry) for entry in secrets.entries()]
    bad = [f for f in findings if not f.ok]
    for finding in bad:
        print(f"{finding.entry.name}: {finding.entry.ref} is {_state(finding)}")
    if bad:
        print(f"{len(bad)} of {len(findings)} secret(s) missing or unusable: `lockgate secrets set NAME`")
        return 1
    print(f"all {len(findings)} secret(s) present and usable")
    return 0
