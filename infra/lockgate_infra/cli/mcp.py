"""``lockgate mcp pin`` and ``lockgate mcp diff``: a server's tool definitions, as a person reviews them.

``pin`` reads the definitions of every tool lockgate.toml gives a table (but those refused) from
the live server and writes them to ``workflows/<package>/mcp/<server>.json``, which is committed with
the workflow: at run time the model is offered those definitions and nothing else, and a tool
whose live definition differs is refused. A re-pin prints what changed, for the review of that
change. ``diff`` compares the live definitions with the pins and writes nothing.

The server's address and credential are the ones the functions use: lockgate.toml's, with an
``env:NAME`` address or credential read from the running local stack's worker (or ``--stack``'s),
and a Secrets Manager credential from the target's; ``--url`` and ``--token-env`` replace them.
Exit codes: 0 pinned, or no change; 1 (``diff``) a tool changed; 2 it could not run.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TextIO

from lockgate.clock import SystemClock
from lockgate.config import load_config
from lockgate.config.mcp import McpServerConfig
from lockgate.errors import ConfigError
from lockgate.mcp.client import McpClient
from lockgate.mcp.definitions import Listing
from lockgate.mcp.pins import PinFile
from lockgate.mcp.servers import Credential, ServerSettings
from lockgate.secrets import SecretResolver
from lockgate.workflows import pin_path, read_pins
from lockgate_infra.cli.targets import Target, TargetError
from lockgate_infra.failures import FAILED, OK, CommandError

WORKER = "AgentWorkerFunction"


def add_mcp_parser(
    commands: Any, run: Callable[[argparse.Namespace], int], default_config: Path
) -> list[argparse.ArgumentParser]:
    """``lockgate mcp pin`` and ``lockgate mcp diff``; returns them (for the target options)."""
    mcp = commands.add_parser(
        "mcp", help="pin an MCP server's tool definitions, or compare them with the pins"
    )
    actions = mcp.add_subparsers(dest="mcp_command", required=True)
    parsers = []
    for name, text in (
        (
            "pin",
            "read the allowed tools' definitions from the server and write them to the workflow's pin file",
        ),
        (
            "diff",
            "compare the server's live definitions with the pins (exit 1 when one changed); writes nothing",
        ),
    ):
        parser = actions.add_parser(name, help=text, description=text + ". " + _EXITS)
        parser.add_argument("server", help="the server's name in lockgate.toml ([mcp.servers.NAME])")
        parser.add_argument(
            "--workflow", required=True, metavar="PACKAGE", help="the workflows package whose pins these are"
        )
        parser.add_argument("--config", type=Path, default=default_config, help="lockgate.toml to read")
        parser.add_argument(
            "--url", default=None, help="the server's address (default: as the functions have it)"
        )
        parser.add_argument(
            "--token-env",
            metavar="VARIABLE",
            default=None,
            help="read the credential from this environment variable instead of the configured secret",
        )
        parser.set_defaults(run=run, mcp_command=name)
        parsers.append(parser)
    return parsers


_EXITS = "Exit 0 pinned (or, for diff, as pinned), 1 a tool changed (diff), 2 it could not run."


def run_mcp(args: argparse.Namespace, target: Callable[[], Target], out: TextIO) -> int:
    """Pin or diff the server ``args.server`` for the package ``args.workflow``."""
    config = load_config(args.config)
    server = config.mcp.get(args.server)
    if server is None:
        known = ", ".join(sorted(config.mcp)) or "none"
        raise CommandError(f"lockgate.toml has no [mcp.servers.{args.server}] (configured: {known})")
    wanted = server.pinned_tools()
    if not wanted:
        raise CommandError(
            f"[mcp.servers.{args.server}] has no tools table that is not refused: nothing to pin"
        )
    lazy = _Lazy(target)
    settings = _settings(args, server, lazy)
    listing = McpClient(settings).list_tools()
    path = pin_path(args.workflow, args.server)
    old = read_pins(path, args.server, args.workflow) if path.exists() else None
    if args.mcp_command == "diff":
        if old is None:
            raise CommandError(
                f"workflow {args.workflow} has no pins of {args.server} yet: run `lockgate mcp pin`"
            )
        drifts = [d for d in old.drift(listing) if d.changed]
        for drift in drifts:
            print(drift.message(), file=out)
        if not drifts:
            print(f"every pinned tool of {args.server} is as pinned ({len(old.tools)} tools)", file=out)
        return FAILED if drifts else OK
    pins = PinFile.from_listing(listing, wanted, SystemClock())
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(pins.dumps(), encoding="utf-8")
    _report(pins, old, listing, server, path, out)
    return OK


def _report(
    pins: PinFile, old: PinFile | None, listing: Listing, server: McpServerConfig, path: Path, out: TextIO
) -> None:
    print(
        f"pinned {len(pins.tools)} tools of MCP server {pins.server} "
        f"(protocol {pins.protocol_version}, {pins.sdk}) to {_shown(path)}",
        file=out,
    )
    changed = {d.tool: d.changes for d in old.drift(listing) if d.changed} if old is not None else {}
    for name, definition in pins.tools.items():
        note = "" if old is None or name in old.tools else "  (new)"
        if name in changed:
            note = f"  (changed: {'; '.join(changed[name])})"
        print(f"  {name:<16} {server.tools[name].risk:<9} {definition.fingerprint[:19]}…{note}", file=out)
    gone = sorted(set(old.tools) - set(pins.tools)) if old is not None else []
    if gone:
        print(f"  no longer pinned: {', '.join(gone)}", file=out)
    print("review the file's diff before you commit it: the model is offered these definitions", file=out)


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


class _Lazy:
    """The target, found only when the address or credential needs the stack."""

    def __init__(self, make: Callable[[], Target]) -> None:
        self._make: Callable[[], Target] = make
        self._target: Target | None = None

    def __call__(self) -> Target:
        if self._target is None:
            try:
                self._target = self._make()
            except TargetError as exc:
                raise CommandError(
                    f"{exc} (or give --url and --token-env to reach the server directly)"
                ) from None
        return self._target


def _settings(args: argparse.Namespace, server: McpServerConfig, target: _Lazy) -> ServerSettings:
    url = args.url or _from_environment(server.url, target, "url")
    credential = None
    if args.token_env:
        token = os.environ.get(args.token_env, "")
        if not token:
            raise CommandError(f"--token-env {args.token_env}: that variable is not set")
        credential = _credential(server, token)
    elif server.credential:
        credential = _credential(server, _secret(server.credential, target))
    try:
        return ServerSettings(
            name=args.server,
            url=url,
            protocol=server.protocol,
            credential=credential,
            connect_timeout=server.connect_timeout_seconds,
            read_timeout=server.read_timeout_seconds,
        )
    except ValueError as exc:
        raise CommandError(str(exc)) from None


def _credential(server: McpServerConfig, token: str) -> Credential:
    if server.auth_header == "Authorization":
        return Credential.bearer(token)
    return Credential(server.auth_header, token)


def _from_environment(value: str, target: _Lazy, what: str) -> str:
    if not value.startswith("env:"):
        return value
    variable = value.removeprefix("env:")
    found = _worker_environment(target()).get(variable, "")
    if not found:
        raise CommandError(
            f"the server's {what} is in {variable}, which the worker's environment does not set"
        )
    return found


def _worker_environment(target: Target) -> Mapping[str, str]:
    if target.state is not None:
        return dict(target.state.get("functions", {}).get(WORKER, {}).get("environment", {}))
    configuration = target.client("lambda").get_function_configuration(FunctionName=target.name(WORKER))
    return dict(configuration.get("Environment", {}).get("Variables", {}))


def _secret(reference: str, target: _Lazy) -> str:
    environment = _worker_environment(target()) if reference.startswith("env:") else {}
    resolver = SecretResolver(environment, secretsmanager=lambda: target().client("secretsmanager"))
    try:
        return resolver.resolve(reference)
    except ConfigError as exc:
        raise CommandError(f"the server's credential: {exc}") from None
