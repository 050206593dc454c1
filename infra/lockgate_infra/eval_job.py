"""The weekly ``eval`` job: the task's eval suite against its gate, failing loudly below it.

It runs ``lockgate eval`` in a child process: the eval builds an isolated moto shop for every
trial (moto patches botocore process-wide), which must never touch the calls of the functions
sharing this process in ``lockgate local``. The harness (moto, the stub judge, the case files)
is part of the development install, not of a deployed function, so in Lambda the job's factory
is not importable and the run fails with ``JobNotWired`` (README, "Evals": run it from CI there).

Environment: ``LOCKGATE_EVAL_TASKS`` (comma-separated, e.g. ``support-inbox``; none set: the run
only logs a warning), and optionally
``LOCKGATE_EVAL_MODEL`` (default the offline ``shop`` model; a ``claude-…`` id needs the key),
``LOCKGATE_EVAL_RUNS`` (default 3), ``LOCKGATE_EVAL_GATE`` (default 0.8).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping

from lockgate.errors import LockgateError
from lockgate.jobs.contract import Job, JobContext, JobResult
from lockgate.jobs.registry import JobResources

MARGIN_SECONDS = 10


class EvalGateFailed(LockgateError):
    """A task's eval suite scored below its gate (or could not run): the job fails, loudly."""


class EvalJob:
    """Run each task's suite; raise if any is under the gate."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self._tasks = [t.strip() for t in environ.get("LOCKGATE_EVAL_TASKS", "").split(",") if t.strip()]
        self._model = environ.get("LOCKGATE_EVAL_MODEL", "shop")
        self._runs = environ.get("LOCKGATE_EVAL_RUNS", "3")
        self._gate = environ.get("LOCKGATE_EVAL_GATE", "0.8")

    def __call__(self, ctx: JobContext) -> JobResult:
        """One suite per task, each in its own process."""
        failed: list[str] = []
        if not self._tasks:
            ctx.log.warning("eval: no tasks to evaluate (set LOCKGATE_EVAL_TASKS, e.g. support-inbox)")
        for task in self._tasks:
            argv = ["eval", task, "--model", self._model, "--runs", self._runs, "--gate", self._gate]
            done = subprocess.run(  # noqa: S603 - our own CLI with fixed arguments
                [
                    sys.executable,
                    "-c",
                    f"from lockgate_infra.cli import main; raise SystemExit(main({argv!r}))",
                ],
                capture_output=True,
                text=True,
                timeout=max(1.0, ctx.time_left() - MARGIN_SECONDS),
                check=False,
            )
            summary = (done.stdout.strip().splitlines() or ["(no output)"])[-1]
            ctx.log.info("eval", extra={"task": task, "exit": done.returncode, "summary": summary[:300]})
            if done.returncode != 0:
                failed.append(f"{task}: exit {done.returncode}: {summary[:200]} {done.stderr.strip()[-300:]}")
        ctx.metrics.add_metric(name="EvalGateFailed", unit="Count", value=len(failed))
        if failed:
            raise EvalGateFailed("; ".join(failed))
        return JobResult(counts={"tasks": len(self._tasks)})


def _isolated(environ: Mapping[str, str]) -> dict[str, str]:
    """The child's environment: the basics and the model key only, with fake AWS credentials.

    Under ``lockgate local`` this process carries AWS_ENDPOINT_URL (the embedded moto server) and
    every function's resource names; the eval builds its own sandbox and must see none of them.
    """
    kept = {k: v for k, v in environ.items() if k in _PASSED or k.startswith(("LC_", "PYENV"))}
    fake = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
    }
    return {**kept, **fake, "AWS_DEFAULT_REGION": "us-east-1"}


_PASSED = frozenset({"PATH", "HOME", "LANG", "TMPDIR", "PYTHONPATH", "VIRTUAL_ENV", "ANTHROPIC_API_KEY"})


def build(resources: JobResources) -> Job:
    """The registry's factory."""
    return EvalJob(resources.names)
