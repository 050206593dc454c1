"""Cold start: median import time of the webhook receiver's handler module vs a bare boto3 handler.

Each sample is a fresh Python process that imports one handler module the way Lambda does
(its folder on sys.path, the layer's ``python/`` folder too, ``import app``), timed with
``perf_counter`` inside the child around the import only; interpreter start-up is the same
for both and left out. The two kinds of process alternate so machine drift cancels out.

- bare: ``import boto3`` and the clients the receiver creates at import (dynamodb, sqs, s3;
  its Secrets Manager client is lazy, so not created).
- receiver: ``functions/webhook_receiver/app.py`` with the template's environment and the
  shipped lockgate.toml, its ``secretsmanager:`` references rewritten to ``env:`` ones
  (resolving secrets is the only thing the import does beyond building objects), and
  ``AWS_ENDPOINT_URL`` pointing nowhere: the import must make no call.

Also counted, in one more child under in-process moto: the AWS calls the import makes with
the shipped lockgate.toml as is (``secretsmanager:`` secrets), since those are round trips
that the env-secrets timing above cannot show.

Run: ``python -m benchmarks.cold_start [--runs 15]``.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import re
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RECEIVER_DIR = ROOT / "functions" / "webhook_receiver"
LAYER_DIR = ROOT / "layers" / "core"  # /opt/python in Lambda
TARGET_OVERHEAD = 0.15
AGENT_DEPENDENCIES = ("anthropic", "pydantic")
MARKER = "COLD-START-RESULT "

BARE_HANDLER = '''"""A bare handler: boto3 and the receiver's import-time clients."""
import boto3

session = boto3.session.Session()
dynamodb = session.client("dynamodb")
sqs = session.client("sqs")
s3 = session.client("s3")


def handler(event, context):
    return {"statusCode": 200, "body": "ok"}
'''

# Runs in the child: put the function's folder and the layer first on sys.path, time the import.
CHILD = f"""
import importlib, json, sys, time
sys.path[:0] = sys.argv[1:]
started = time.perf_counter()
importlib.import_module("app")
seconds = time.perf_counter() - started
print({MARKER!r} + json.dumps({{"seconds": seconds, "modules": len(sys.modules),
      "loaded": [m for m in {AGENT_DEPENDENCIES!r} if m in sys.modules]}}))
"""


# Runs in the child: moto in-process, the shipped config's secrets created, every call counted.
CALLS_CHILD = f"""
import base64, importlib, json, os, sys, tomllib
import boto3, botocore.handlers
from moto import mock_aws
sys.path[:0] = sys.argv[1:]
calls = {{}}
def count(event_name, **_):
    _, service, operation = event_name.split(".", 2)
    calls[service + "." + operation] = calls.get(service + "." + operation, 0) + 1
botocore.handlers.BUILTIN_HANDLERS.append(("before-send", count))
with mock_aws():
    with open(os.environ["LOCKGATE_CONFIG"], "rb") as handle:
        refs = [r for s in tomllib.load(handle)["sources"].values() for r in s["secrets"]]
    manager = boto3.client("secretsmanager")
    for ref in refs:
        if ref.startswith("secretsmanager:"):
            value = base64.b64encode(os.urandom(24)).decode()
            manager.create_secret(Name=ref.partition(":")[2], SecretString=value)
    calls.clear()
    importlib.import_module("app")
print({MARKER!r} + json.dumps(calls))
"""


@dataclass(frozen=True)
class Sample:
    """One child process's figures."""

    seconds: float
    modules: int
    loaded: tuple[str, ...]


@dataclass(frozen=True)
class ImportLine:
    """One line of ``-X importtime``: microseconds spent in the module itself and with its imports."""

    module: str
    self_us: int
    cumulative_us: int


@dataclass
class ColdStartResult:
    """Both kinds of handler, sampled alternately, plus importtime diagnostics for the receiver."""

    bare: list[Sample] = field(default_factory=list)
    receiver: list[Sample] = field(default_factory=list)
    ours: list[ImportLine] = field(default_factory=list)  # lockgate.*, by cumulative time
    extra: list[ImportLine] = field(default_factory=list)  # imported by the receiver only, by self time
    compiled: bool = False
    import_calls: dict[str, int] = field(default_factory=dict)  # shipped config, secretsmanager: secrets
    changed_during_run: list[str] = field(default_factory=list)  # sources edited after compileall

    @property
    def bare_ms(self) -> float:
        return _median_ms(self.bare)

    @property
    def receiver_ms(self) -> float:
        return _median_ms(self.receiver)

    @property
    def ratio(self) -> float:
        """Receiver over bare, wall-clock medians: the figure the target is about."""
        return self.receiver_ms / self.bare_ms

    @property
    def paired_ratio(self) -> float:
        """Median of receiver/bare over the samples taken side by side: robust to drift."""
        return statistics.median(r.seconds / b.seconds for r, b in zip(self.receiver, self.bare, strict=True))

    @property
    def min_ratio(self) -> float:
        """Receiver over bare, fastest samples: what is left when nothing else ran."""
        return min(s.seconds for s in self.receiver) / min(s.seconds for s in self.bare)

    @property
    def noisy(self) -> bool:
        """The samples spread widely (a busy machine): the medians move between runs."""
        walls = sorted(s.seconds for s in self.bare + self.receiver)
        quartiles = statistics.quantiles(walls, n=4) if len(walls) >= 4 else [walls[0], 0, walls[-1]]
        return quartiles[2] / quartiles[0] > 1.15

    @property
    def agent_dependencies_loaded(self) -> set[str]:
        return {name for s in self.receiver for name in s.loaded}


def _median_ms(samples: list[Sample]) -> float:
    return statistics.median(s.seconds for s in samples) * 1000


def child_environment(config_path: Path) -> dict[str, str]:
    """What Lambda would set for the receiver (template Globals + function env), with fake AWS."""
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "POWERTOOLS_", "LOCKGATE_"))}
    keep.pop("PYTHONPATH", None)
    return {
        **keep,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9",  # nowhere: the import must not call AWS
        "AWS_LAMBDA_FUNCTION_NAME": "lockgate-webhook-receiver",
        "POWERTOOLS_SERVICE_NAME": "lockgate",
        "POWERTOOLS_METRICS_NAMESPACE": "Lockgate",
        "POWERTOOLS_LOG_LEVEL": "INFO",
        "LOCKGATE_CONFIG": str(config_path),
        "LOCKGATE_STAGE": "dev",
        "INBOX_TABLE": "lockgate-inbox",
        "BODY_BUCKET": "lockgate-bodies",
        "INBOX_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/lockgate-inbox",
    }


def env_secrets_config(workdir: Path) -> tuple[Path, dict[str, str]]:
    """The shipped lockgate.toml with each ``secretsmanager:NAME`` turned into ``env:VAR``."""
    values: dict[str, str] = {}

    def to_env(match: re.Match[str]) -> str:
        var = "BENCH_SECRET_" + re.sub(r"\W", "_", match.group(1)).upper()
        values[var] = base64.b64encode(secrets.token_bytes(24)).decode()  # valid for every scheme
        return f'"env:{var}"'

    text = re.sub(r'"secretsmanager:([^"]+)"', to_env, (ROOT / "lockgate.toml").read_text())
    path = workdir / "lockgate.toml"
    path.write_text(text)
    return path, values


def compile_project(*folders: Path) -> None:
    """Write .pyc files, as a built layer ships them (PYTHONDONTWRITEBYTECODE=1 stops the children)."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", *map(str, folders)], check=True)


def changed_since(since: float, folders: Iterable[Path]) -> list[str]:
    """Sources modified after ``since``: their .pyc went stale mid-run, so those samples compiled them."""
    return sorted(
        str(p.relative_to(ROOT))
        for folder in folders
        for p in folder.rglob("*.py")
        if p.stat().st_mtime > since
    )


def calls_at_import(env: dict[str, str]) -> dict[str, int]:
    """AWS calls made while importing the receiver with the shipped lockgate.toml, under moto."""
    env = {k: v for k, v in env.items() if not k.startswith("AWS_ENDPOINT_URL")}
    env["LOCKGATE_CONFIG"] = str(ROOT / "lockgate.toml")
    done = subprocess.run(
        [sys.executable, "-c", CALLS_CHILD, str(RECEIVER_DIR), str(LAYER_DIR)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        cwd=RECEIVER_DIR,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith(MARKER)]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"counting the receiver's import calls failed:\n{done.stderr[-3000:]}")
    counts: dict[str, int] = json.loads(lines[-1].removeprefix(MARKER))
    return counts


def _run_child(function_dir: Path, env: dict[str, str], importtime: bool = False) -> tuple[Sample, str]:
    args = [
        sys.executable,
        *(["-X", "importtime"] if importtime else []),
        "-c",
        CHILD,
        str(function_dir),
        str(LAYER_DIR),
    ]
    done = subprocess.run(args, env=env, capture_output=True, text=True, check=False, cwd=function_dir)
    lines = [line for line in done.stdout.splitlines() if line.startswith(MARKER)]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"import of {function_dir / 'app.py'} failed:\n{done.stderr[-3000:]}")
    data = json.loads(lines[-1].removeprefix(MARKER))
    sample = Sample(data["seconds"], data["modules"], tuple(data["loaded"]))
    return sample, done.stderr


def parse_importtime(stderr: str) -> dict[str, ImportLine]:
    """``import time: self [us] | cumulative | imported package`` lines, by module name."""
    out: dict[str, ImportLine] = {}
    for line in stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|\s+(.+)$", line)
        if m:
            name = m.group(3).strip()
            out[name] = ImportLine(name, int(m.group(1)), int(m.group(2)))
    return out


def measure(runs: int = 15, warmup: int = 2, compile_first: bool = True, top: int = 12) -> ColdStartResult:
    """Sample both handlers ``runs`` times each, alternating, then profile the receiver's imports."""
    result = ColdStartResult(compiled=compile_first)
    with tempfile.TemporaryDirectory(prefix="lockgate-coldstart-") as tmp:
        workdir = Path(tmp)
        bare_dir = workdir / "bare"
        bare_dir.mkdir()
        (bare_dir / "app.py").write_text(BARE_HANDLER)
        config, secret_values = env_secrets_config(workdir)
        env = {**child_environment(config), **secret_values}
        compiled_at = time.time()
        if compile_first:
            compile_project(LAYER_DIR / "lockgate", RECEIVER_DIR, bare_dir)
        kinds = ((bare_dir, result.bare), (RECEIVER_DIR, result.receiver))
        for _ in range(warmup):  # page cache, pyc reads
            for folder, _samples in kinds:
                _run_child(folder, env)
        for i in range(runs):
            for folder, samples in kinds if i % 2 == 0 else kinds[::-1]:
                samples.append(_run_child(folder, env)[0])
        bare_lines = parse_importtime(_run_child(bare_dir, env, importtime=True)[1])
        receiver_lines = parse_importtime(_run_child(RECEIVER_DIR, env, importtime=True)[1])
        result.import_calls = calls_at_import(env)
        if compile_first:
            result.changed_during_run = changed_since(compiled_at, (LAYER_DIR / "lockgate", RECEIVER_DIR))
    # importlib.import_module (what Lambda's runtime calls) is not itself in -X importtime's output.
    ours = [line for name, line in receiver_lines.items() if name.startswith("lockgate")]
    result.ours = sorted(ours, key=lambda line: -line.cumulative_us)[:top]
    extra = [
        line
        for name, line in receiver_lines.items()
        if name not in bare_lines and not name.startswith("lockgate")
    ]
    result.extra = sorted(extra, key=lambda line: -line.self_us)[:top]
    return result


def render(result: ColdStartResult) -> str:
    """Medians, the ratio against the target, the agent-dependency check and importtime offenders."""

    def row(label: str, samples: list[Sample]) -> str:
        walls = sorted(s.seconds * 1000 for s in samples)
        return (
            f"  {label:33}{_median_ms(samples):8.1f} ms {walls[0]:8.1f} ms"
            f"   max {walls[-1]:.0f} ms, {samples[0].modules} modules"
        )

    added = result.ratio - 1
    loaded = result.agent_dependencies_loaded
    lines = [
        f"Cold start: import of the handler module, median of {len(result.receiver)} fresh processes each, "
        "alternating",
        (
            "Project .pyc precompiled with compileall first (PYTHONDONTWRITEBYTECODE=1 is set here, "
            "and a built Lambda layer ships compiled code)."
            if result.compiled
            else "Project code NOT precompiled."
        ),
        "",
        f"  {'':33}{'median':>11} {'min':>11}",
        row("bare boto3 handler (3 clients)", result.bare),
        row("webhook_receiver/app.py", result.receiver),
        f"  {'ratio receiver/bare':33}{result.ratio:8.3f}    {result.min_ratio:8.3f}       "
        f"(side by side: {result.paired_ratio:.3f})",
        "",
        f"Receiver adds {added:+.1%} (medians; {result.min_ratio - 1:+.1%} fastest-to-fastest). "
        f"Target ≤ +{TARGET_OVERHEAD:.0%} on the medians: {'met' if added <= TARGET_OVERHEAD else 'MISSED'}",
        *(
            [
                "NOISY: samples spread > 15% between quartiles (busy machine); rerun with --runs 31 "
                "and compare the fastest-to-fastest ratio."
            ]
            if result.noisy
            else []
        ),
        "",
        "Agent dependencies in sys.modules after importing the receiver: "
        + ", ".join(f"{name} {'YES' if name in loaded else 'no'}" for name in AGENT_DEPENDENCIES),
        "AWS calls made by the import with the shipped lockgate.toml (secretsmanager: secrets, moto): "
        + (", ".join(f"{op} ×{n}" for op, n in sorted(result.import_calls.items())) or "none"),
        "",
        "python -X importtime, our modules (receiver process), by cumulative time:",
        f"  {'self us':>8} {'cumul us':>9}  module",
    ]
    lines += [f"  {x.self_us:>8} {x.cumulative_us:>9}  {x.module}" for x in result.ours]
    lines += [
        "",
        "Imported by the receiver but not by the bare handler (not lockgate.*), by self time:",
        f"  {'self us':>8} {'cumul us':>9}  module",
    ]
    lines += [f"  {x.self_us:>8} {x.cumulative_us:>9}  {x.module}" for x in result.extra]
    lines.append("(-X importtime adds its own overhead; use it to rank, not for the medians above.)")
    if result.changed_during_run:
        lines += [
            "",
            "WARNING: sources changed after compileall, so some samples compiled them; rerun: "
            + ", ".join(result.changed_during_run),
        ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="fresh processes per handler")
    args = parser.parse_args(argv)
    result = measure(args.runs)
    print(render(result))
    ok = result.ratio - 1 <= TARGET_OVERHEAD and not result.agent_dependencies_loaded
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
