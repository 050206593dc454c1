"""The weekly ``eval`` job: the task's eval suite against its gate, failing loudly below it.

It runs ``lockgate eval`` in a child process: the eval builds an isolated moto shop for every
trial (moto patches botocore process-wide), which must never touch the calls of the job runner
(its lease and heartbeat) or of the functions sharing this process in ``lockgate local``. The
child imports from the same paths as this process (in Lambda, ``/var/task`` and the layer), sees
no AWS endpoint and only fake credentials, and gets the model key only when a real model is asked.

Deployed, it runs in EvalJobsFunction, which is packaged with the harness (``functions/eval_jobs``).

Settings (the function's environment): ``LOCKGATE_EVAL_TASKS`` (comma-separated, e.g.
``support-inbox``; none set: the run only logs a warning), ``LOCKGATE_EVAL_MODEL`` (default the
offline ``shop`` model; ``task`` or a ``claude-…`` id is real Claude and needs the key),
``LOCKGATE_EVAL_JUDGE`` (default ``stub``), ``LOCKGATE_EVAL_RUNS`` (default 3),
``LOCKGATE_EVAL_GATE`` (default 0.8). Real Claude is the deployment's ``[provider]``, as its worker
calls it: on Anthropic's API with the key from ``ANTHROPIC_API_KEY_REF`` (or, locally,
``ANTHROPIC_API_KEY``); on Bedrock or Claude Platform on AWS signed with this function's role,
whose credentials the child gets under names of its own (``lockgate_infra.evals.signing``), and no
key is read. ``ANTHROPIC_BASE_URL``, if set, is where real-model requests go. The child loads the
config with this function's stage (``LOCKGATE_STAGE``), as the worker does.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from lockgate.config import ProviderConfig
from lockgate.errors import ConfigError, LockgateError
from lockgate.jobs.contract import Job, JobContext, JobResources, JobResult
from lockgate.model.sdk import AwsKeys
from lockgate_infra.evals.signing import as_environment, default_keys

MARGIN_SECONDS = 10
LOGGED_LINES = 40  # the report's tail: per-case counts, cost, the verdict

KeySource = Callable[[], str | None]
KeysSource = Callable[[], AwsKeys]


class EvalGateFailed(LockgateError):
    """A task's eval suite scored below its gate (or could not run): the job fails, loudly."""


class EvalJob:
    """Run each task's suite; raise if any is under the gate."""

    def __init__(
        self,
        settings: Mapping[str, str],
        model_key: KeySource = lambda: None,
        environ: Mapping[str, str] = os.environ,
        *,
        provider: ProviderConfig | None = None,
        aws_keys: KeysSource = default_keys,
    ) -> None:
        self._tasks = [t.strip() for t in settings.get("LOCKGATE_EVAL_TASKS", "").split(",") if t.strip()]
        self._model = settings.get("LOCKGATE_EVAL_MODEL", "shop")
        self._judge = settings.get("LOCKGATE_EVAL_JUDGE", "stub")
        self._runs = settings.get("LOCKGATE_EVAL_RUNS", "3")
        self._gate = settings.get("LOCKGATE_EVAL_GATE", "0.8")
        self._model_key = model_key
        self._base_url = settings.get("ANTHROPIC_BASE_URL", "")
        self._stage = settings.get("LOCKGATE_STAGE", "")
        self._environ = environ
        self._provider = provider or ProviderConfig()  # the deployment's [provider]: who answers real Claude
        self._aws_keys = aws_keys  # the role's credentials, read only when a real model signs with them

    def __call__(self, ctx: JobContext) -> JobResult:
        """One suite per task, each in its own process."""
        failed: list[str] = []
        if not self._tasks:
            ctx.log.warning("eval: no tasks to evaluate (set LOCKGATE_EVAL_TASKS, e.g. support-inbox)")
        env = self._child_environment() if self._tasks else {}
        for task in self._tasks:
            outcome = self._run_one(task, env, max(1.0, ctx.time_left() - MARGIN_SECONDS))
            ctx.log.info("eval", extra={"task": task, "report": outcome.report})
            if outcome.failure:
                failed.append(f"{task}: {outcome.failure}")
        ctx.metrics.add_metric(name="EvalGateFailed", unit="Count", value=len(failed))
        if failed:
            raise EvalGateFailed("; ".join(failed))
        return JobResult(counts={"tasks": len(self._tasks)})

    def _run_one(self, task: str, env: dict[str, str], timeout: float) -> _Outcome:
        argv = [
            task, "--model", self._model, "--judge", self._judge,
            "--runs", self._runs, "--gate", self._gate, "--no-save",
        ]  # fmt: skip
        try:
            done = subprocess.run(  # noqa: S603 - our own eval command with fixed arguments
                [sys.executable, "-m", "lockgate_infra.evals", *argv],
                capture_output=True,
                text=True,
                env=env,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return _Outcome(
                "(stopped)",
                f"did not finish within {timeout:.0f} s (lower LOCKGATE_EVAL_RUNS, or raise the timeout)",
            )
        lines = done.stdout.strip().splitlines()
        report = "\n".join(lines[-LOGGED_LINES:]) or "(no output)"
        if done.returncode == 0:
            return _Outcome(report, "")
        # The report's verdict line; without a report (exit 2: could not start), the error's last line.
        verdict = next((line for line in lines if line.startswith(f"eval {task} ")), "")
        reason = verdict or next(reversed([x for x in done.stderr.splitlines() if x.strip()]), "no output")
        return _Outcome(report, f"exit {done.returncode}: {reason.strip()[:300]}")

    def _child_environment(self) -> dict[str, str]:
        env = _isolated(self._environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)  # what this process imports from
        if self._stage:
            env["LOCKGATE_STAGE"] = self._stage
        if not (_needs_key(self._model) or _needs_key(self._judge)):
            env.pop("ANTHROPIC_API_KEY", None)  # an offline eval cannot spend money by mistake
            return env
        if self._provider.uses_api_key:
            key = self._model_key()
            if key:
                env["ANTHROPIC_API_KEY"] = key
        else:  # signed with the role: no key exists to read, and none is passed on
            env.pop("ANTHROPIC_API_KEY", None)
            env.update(as_environment(self._aws_keys()))
        if self._base_url:  # a gateway in front of the API, as the worker is given one
            env["ANTHROPIC_BASE_URL"] = self._base_url
        return env


@dataclass(frozen=True)
class _Outcome:
    report: str  # the tail of the report, for the log
    failure: str  # empty when the gate passed


def _needs_key(spec: str) -> bool:
    """Real Claude: ``task`` or a bare ``claude-…`` id (``shop@claude-…`` is the stub priced as one)."""
    return spec == "task" or spec.startswith("claude-")


def _isolated(environ: Mapping[str, str]) -> dict[str, str]:
    """The child's environment: the basics and the model key only, with fake AWS credentials.

    Under ``lockgate local`` this process carries AWS_ENDPOINT_URL (the embedded moto server) and
    every function's resource names; in Lambda it carries the function's real credentials. The
    eval builds its own sandbox and must see none of them.
    """
    kept = {k: v for k, v in environ.items() if k in _PASSED or k.startswith(("LC_", "PYENV"))}
    fake = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
    }
    return {**kept, **fake, "AWS_DEFAULT_REGION": "us-east-1"}


_PASSED = frozenset({"PATH", "HOME", "LANG", "TMPDIR", "VIRTUAL_ENV", "ANTHROPIC_API_KEY"})


def build(resources: JobResources) -> Job:
    """The registry's factory: the settings from the function's environment, the key by reference,
    the deployment's provider (refused when the stack's ModelProvider, its role's, differs)."""
    from lockgate.secrets import SecretResolver

    names = resources.names
    provider = resources.config.provider
    deployed = names.get("LOCKGATE_MODEL_PROVIDER", "").strip()
    if deployed and deployed != provider.name:
        raise ConfigError(
            f'lockgate.toml [provider] name is "{provider.name}" but the stack was deployed with '
            f"ModelProvider={deployed}: the eval function's role has that provider's permissions only"
        )
    secrets = SecretResolver(names, secretsmanager=lambda: resources.client("secretsmanager"))

    def model_key() -> str | None:
        ref = names.get("ANTHROPIC_API_KEY_REF", "").strip()
        return secrets.resolve(ref) if ref else os.environ.get("ANTHROPIC_API_KEY")

    return EvalJob(names, model_key, provider=provider)
