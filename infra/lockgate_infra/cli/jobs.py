"""`lockgate jobs`: run one scheduled job now, and see every job's heartbeat, lease and cursor.

``jobs run NAME`` against the local stack runs the job in this process with the same runner (and
lease) as the function, on the stack's moto; against a deployed stack it invokes the deployed
function, so the job runs under its own role. Either way the function is the one the template's
schedule sends the job to: ScheduledJobsFunction, or EvalJobsFunction for ``eval``.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from lockgate.clock import SystemClock
from lockgate.config import LockgateConfig
from lockgate.jobs.health import JobHealth, job_health
from lockgate.jobs.registry import job_registry
from lockgate.jobs.schedule import iso
from lockgate.jobs.state import JobStateStore
from lockgate.runtime.deps import Deps
from lockgate.runtime.jobs import build_jobs
from lockgate.secrets import SecretResolver
from lockgate.settings import JobsSettings
from lockgate.telemetry import CountingMetrics
from lockgate_infra.cli.targets import Target, TargetError, stack_config
from lockgate_infra.options import utc_time

FUNCTION = "ScheduledJobsFunction"
log = logging.getLogger("lockgate_infra.jobs")  # not under "lockgate": a function's JSON handler is not ours


def add_jobs_parser(commands: Any, *, run: Any) -> list[argparse.ArgumentParser]:
    """``jobs run`` and ``jobs status``; returns them so the caller adds --local/--stack."""
    jobs = commands.add_parser("jobs", help="scheduled jobs: run one now, or see their heartbeats")
    sub = jobs.add_subparsers(dest="jobs_command", required=True)
    run_now = sub.add_parser("run", help="run one job now (as if its schedule fired)")
    run_now.add_argument("name", help="the job, e.g. sweep-inbox (see `lockgate jobs status`)")
    run_now.add_argument(
        "--time", type=utc_time, help="the scheduled time to run it for (ISO 8601 UTC; default now)"
    )
    run_now.set_defaults(run=run, jobs_action="run")
    status = sub.add_parser("status", help="each job's last success, age, lease and cursor; overdue flagged")
    status.add_argument("--json", action="store_true", help="machine-readable output")
    status.set_defaults(run=run, jobs_action="status")
    return [run_now, status]


def run_jobs(args: argparse.Namespace, target: Target, root: Path, out: TextIO | None = None) -> int:
    """Dispatch ``lockgate jobs ...``."""
    out = out or sys.stdout
    config = stack_config(target, root)
    registry = job_registry(config)
    if args.jobs_action == "status":
        store = JobStateStore(target.client("dynamodb"), target.name("StateTable"))
        health = job_health(registry, store, time.time())
        if args.json:
            print(json.dumps([h.as_dict() for h in health], indent=2), file=out)
        else:
            print(render_status(health), file=out)
        return 1 if any(h.overdue for h in health) else 0
    if args.name not in registry:
        raise TargetError(f"no job called {args.name!r}; known: {', '.join(registry)}")
    function = function_for(args.name, root)
    if args.stack:
        return _invoke_deployed(target, function, args.name, args.time, out)
    return _run_here(target, root, config, function, args.name, args.time, out)


def function_for(job: str, root: Path) -> str:
    """The function the template's schedule sends ``job`` to (ScheduledJobsFunction if none does)."""
    from lockgate_infra.local.template import LocalPlan

    for schedule in LocalPlan.from_file(root / "template.yaml").schedules:
        if schedule.input and json.loads(schedule.input).get("job") == job:
            return schedule.function
    return FUNCTION


def _run_here(
    target: Target,
    root: Path,
    config: LockgateConfig,
    function: str,
    name: str,
    scheduled_time: str | None,
    out: TextIO,
) -> int:
    state = target.state or {}
    names: dict[str, str] = dict(state.get("functions", {}).get(function, {}).get("environment", {}))
    if not names:
        raise TargetError(f"the local stack has no {function}")
    clock = SystemClock()
    deps = Deps(
        client=target.client, secrets=SecretResolver(names), clock=clock, log=log, metrics=CountingMetrics()
    )
    runner = build_jobs(JobsSettings.from_env(names), config, deps).runner
    timeout = float(names.get("JOBS_TIMEOUT_SECONDS", "300"))
    outcome = runner.run(name, scheduled_time or iso(clock.now()), lambda: timeout)
    print(json.dumps(outcome.as_dict()), file=out)
    return 0


def _invoke_deployed(
    target: Target, function: str, name: str, scheduled_time: str | None, out: TextIO
) -> int:
    from botocore.config import Config

    payload = {"job": name, "scheduled_time": scheduled_time or iso(time.time())}
    # Wait as long as the job may run (EvalJobsFunction: 15 minutes), and never retry: a retried
    # invoke would be a second run.
    lambda_ = target.session.client(
        "lambda",
        endpoint_url=target.endpoint_url,
        config=Config(read_timeout=960, retries={"total_max_attempts": 1}),
    )
    # Long work says so: the answer comes when the job ends (up to the function's timeout).
    print(f"running {name} on {function} of {target.label}; waiting for it to finish…", file=sys.stderr)
    response = lambda_.invoke(FunctionName=target.name(function), Payload=json.dumps(payload).encode())
    body = response["Payload"].read().decode()
    print(body, file=out)
    return 1 if response.get("FunctionError") else 0


def render_status(health: list[JobHealth]) -> str:
    """One line per job: name, schedule, last success and age, lease, cursor; OVERDUE first."""
    lines = [f"{'job':22} {'schedule':28} {'last success':22} {'age':>8}  lease / cursor"]
    for h in health:
        last = iso(h.last_success_at) if h.last_success_at else "never"
        age = "-" if h.age_seconds is None else _duration(h.age_seconds)
        notes = []
        if h.lease_held_until:
            notes.append(f"running (lease until {iso(h.lease_held_until)})")
        if h.cursor:
            notes.append(f"cursor {json.dumps(dict(h.cursor))[:60]}")
        if h.queued_time:
            notes.append(f"queued {h.queued_time}")
        if h.last_error:
            notes.append(f"last error: {h.last_error[:80]}")
        flag = "OVERDUE " if h.overdue else ""
        lines.append(f"{h.name:22} {h.schedule:28} {last:22} {age:>8}  {flag}{'; '.join(notes)}".rstrip())
    return "\n".join(lines)


def _duration(seconds: float) -> str:
    for unit, size in (("d", 86_400), ("h", 3_600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f}{unit}"
    return f"{int(seconds)}s"
