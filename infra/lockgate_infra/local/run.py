"""``lockgate local``: the embedded stack in the foreground, and the state file other commands read."""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from lockgate_infra.local.banner import banner
from lockgate_infra.local.console import Console, routed_output
from lockgate_infra.local.outside_apis import OutsideApi, stand_ins_of
from lockgate_infra.local.status import REFRESH_SECONDS, Monitor, StandIn

if TYPE_CHECKING:
    from lockgate_infra.local.gateway import Gateway
    from lockgate_infra.local.model import ModelChoice
    from lockgate_infra.local.slack_stub import SlackStub
    from lockgate_infra.local.stack import LocalStack

STATE_VERSION = 2  # 2: one state file per gateway port


class LocalStackChoice(Exception):  # noqa: N818 - the message is the answer, shown as is
    """Several local stacks run in this checkout and the command did not say which."""


def state_path(root: str | Path, port: int) -> Path:
    """Where the local stack on gateway ``port`` describes itself: ``<repo>/.lockgate/local-<port>.json``."""
    return Path(root) / ".lockgate" / f"local-{port}.json"


def log_path(root: str | Path, port: int) -> Path:
    """Where the functions' JSON logs of the local stack on ``port`` go."""
    return Path(root) / ".lockgate" / f"local-{port}.log"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, under another user
    return True


def running_stacks(root: str | Path) -> list[dict[str, Any]]:
    """The state of every local stack running in this checkout, by port (stale files count as none)."""
    found = []
    for path in sorted((Path(root) / ".lockgate").glob("local-*.json")):
        try:
            state = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(state, dict) and isinstance(state.get("pid"), int) and _alive(state["pid"]):
            found.append(state)
    return sorted(found, key=lambda state: int(state.get("port", 0)))


def read_local_state(root: str | Path, port: int | None = None) -> dict[str, Any] | None:
    """The running local stack's state (the one on ``port``, or the only one); None if none runs.

    Raises LocalStackChoice when several run and no port says which.
    """
    running = running_stacks(root)
    if port is not None:
        return next((state for state in running if state.get("port") == port), None)
    if len(running) > 1:
        ports = ", ".join(str(state.get("port")) for state in running)
        raise LocalStackChoice(
            f"{len(running)} local stacks are running (gateway ports {ports}): say which with --local-port"
        )
    return running[0] if running else None


def local_state(stack: LocalStack, gateway: Gateway) -> dict[str, Any]:
    """What other commands need to reach a running stack.

    The functions' environments name the local gateway wherever the template names the HTTP API,
    so a job run with ``--local`` (e.g. the approval digest) links to this stack, not a deployed host;
    they hold what the stack sets over the template's too (a stand-in's URL, which ``lockgate mcp pin``
    reads an MCP server's address from).
    """
    from lockgate_infra.local.environment import localise_api_url

    plan = stack.plan
    return {
        "version": STATE_VERSION,
        "pid": os.getpid(),
        "port": gateway.port,
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "endpoint_url": stack.endpoint_url,
        "lambda_url": stack.lambda_api.url if stack.lambda_api else None,  # Lambda's Invoke, locally
        "gateway_url": gateway.url,
        "region": stack.region,
        "template": str(stack.template_path),
        "config": str(stack.config_path),
        "resources": dict(stack.resources),
        "tables": {t.logical_id: t.name for t in plan.tables.values()},
        "queues": {q.logical_id: stack.resources[q.logical_id] for q in plan.queues.values()},
        "buckets": {b.logical_id: b.name for b in plan.buckets.values()},
        "functions": {
            f.logical_id: {
                "name": f.name,
                "environment": {
                    **{k: localise_api_url(v, gateway.url) for k, v in f.environment.items()},
                    **stack.overrides,
                },
            }
            for f in plan.functions.values()
        },
        "routes": [{"routeKey": r.route_key, "function": r.function} for r in plan.routes],
    }


@contextmanager
def _stop_on_signals(stop: threading.Event) -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may install handlers; the caller stops us with ``stop``
        return
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    for sig in previous:
        signal.signal(sig, lambda *_: stop.set())
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextmanager
def _request_log(out: Console) -> Iterator[None]:
    """One line per gateway request and poller batch on ``out``, unless logging is already set up."""
    logger = logging.getLogger("lockgate_infra.local")
    if logger.handlers or logging.getLogger().handlers:
        yield
        return
    handler = logging.StreamHandler(out)
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", "%H:%M:%S"))
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(logging.NOTSET)


def run_local(
    config_path: str | Path | None = None,
    port: int = 0,
    *,
    template_path: str | Path | None = None,
    moto_port: int = 0,
    parameters: Mapping[str, str] | None = None,
    always_base64: bool = False,
    out: TextIO | None = None,
    stop: threading.Event | None = None,
    ready: Callable[[LocalStack], None] | None = None,
    model: str | Sequence[str] | None = None,
    clock_speed: float | None = 1.0,
    verbose: bool = False,
    provider: str | None = None,
    stand_ins: Sequence[str] = (),
) -> int:
    """Run the embedded stack until Ctrl-C, SIGTERM or ``stop``; returns the exit status.

    The config's ``secretsmanager:`` secrets get development values (printed); the schedules run
    ``clock_speed`` times real time (None: none). The console gets one line per event, the
    functions' JSON logs go to ``.lockgate/local-<port>.log`` (``verbose``: the console too). The model
    calls take ``provider``'s wire format (None: the config's); ``stand_ins`` play outside APIs.
    """
    from lockgate_infra.local.stack import LocalStack

    out = out or sys.stdout
    stop = stop or threading.Event()
    template = _free_template(template_path, port, out)
    if template is None:
        return 2
    from lockgate_infra.local.model import local_model
    from lockgate_infra.local.model_provider import provider_config
    from lockgate_infra.local.slack_stub import local_slack
    from lockgate_infra.local.workflows import seed_workflows

    console = Console(out)
    with (
        _stop_on_signals(stop),
        _request_log(console),
        provider_config(config_path or template.parent / "lockgate.toml", provider) as wire,
        local_model(model, os.environ, wire.name, config_path=wire.config_path) as chosen,
        local_slack(wire.config_path, console.stamped) as slack,
        stand_ins_of(wire.config_path, stand_ins, console.stamped) as apis,
        LocalStack(template, config_path=wire.config_path, parameters=parameters, port=moto_port,
                   environment=_environment(chosen, slack, apis), keep_spans=True, stand_ins=apis) as stack,
    ):  # fmt: skip
        dev_secrets = seed_secrets(stack)
        seed_workflows(stack)
        gateway = stack.start_gateway(port, always_base64=always_base64, load_functions=False)
        monitor = Monitor(stack, servers(chosen, slack, apis), console.stamped)
        # Routed before the first handler loads: what it logs at its cold start is its log too.
        with routed_output(console, log_path(template.parent, gateway.port), verbose=verbose) as logs:
            _start(stack, clock_speed)
            described = (chosen.description, wire.description)
            for line in banner(stack, gateway, described, dev_secrets, logs, monitor.status()):
                console.line(line)
            _serve(stack, gateway, monitor, ready, stop)
    console.line("local stack stopped")
    return 0


def _free_template(template_path: str | Path | None, port: int, out: TextIO) -> Path | None:
    """The template's path; None (said on ``out``) when a local stack already runs on ``port`` here."""
    from lockgate_infra.local.stack import default_template_path

    template = Path(template_path or default_template_path()).resolve()
    if port and read_local_state(template.parent, port) is not None:
        print(f"lockgate: a local stack already runs on port {port}; pick another --port", file=out)
        return None
    return template


def _environment(
    chosen: ModelChoice, slack: SlackStub | None, apis: Mapping[str, OutsideApi]
) -> dict[str, str]:
    """What every function's environment gets over the template's: the stand-ins' URLs, and
    approval links printed on the console."""
    from lockgate_infra.local.slack_stub import slack_environment

    urls = {variable: api.url for variable, api in apis.items()}
    return {**chosen.environment, **slack_environment(slack), **urls, "APPROVAL_CHANNELS": "print"}


def _start(stack: LocalStack, clock_speed: float | None) -> None:
    """Load the routed functions, start the pollers and (unless ``clock_speed`` is None) the schedules."""
    stack.load_route_functions()
    stack.start_pollers()
    if clock_speed is not None:
        stack.start_scheduler(clock_speed)


def servers(
    chosen: ModelChoice, slack: SlackStub | None, apis: Mapping[str, OutsideApi] | None = None
) -> list[StandIn]:
    """The servers that play outside services: the offline model's Messages API, Slack, your APIs (an
    MCP server's listed as ``mcp``)."""
    found = []
    if chosen.stand_in is not None:
        found.append(StandIn("model", f"Messages API stand-in ({chosen.name})", chosen.stand_in.base_url,
                             chosen.stand_in))  # fmt: skip
    if slack is not None:
        found.append(StandIn("slack", "Slack stand-in (Web API, response_urls)", slack.url, slack))
    for variable, api in (apis or {}).items():
        found.append(StandIn(getattr(api, "kind", "api"), f"{api.name} ({variable})", api.url, api))
    return found


def _serve(
    stack: LocalStack,
    gateway: Gateway,
    monitor: Monitor,
    ready: Callable[[LocalStack], None] | None,
    stop: threading.Event,
) -> None:
    """Publish the state file for ``--local`` CLI calls, refreshing its status every second, until
    ``stop``; the file goes with us."""
    state_file = state_path(stack.template_path.parent, gateway.port)
    state_file.parent.mkdir(parents=True, exist_ok=True)
    state = local_state(stack, gateway)
    _write(state_file, {**state, "status": monitor.status()})
    try:
        if ready is not None:
            ready(stack)
        while not stop.wait(REFRESH_SECONDS):
            _write(state_file, {**state, "status": monitor.status()})
    finally:
        state_file.unlink(missing_ok=True)


def _write(path: Path, state: Mapping[str, Any]) -> None:
    """Replace the state file whole: a reader never sees half of it."""
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(state, indent=2) + "\n", encoding="utf-8")
    os.replace(partial, path)


def seed_secrets(stack: LocalStack) -> dict[str, str]:
    """Create the config's webhook secrets in the stack with development values; source → value."""
    from lockgate.config import load_config
    from lockgate_infra.local.devsecrets import seed_dev_secrets

    return seed_dev_secrets(load_config(stack.config_path), stack.client("secretsmanager"))
