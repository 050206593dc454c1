"""The worker's start: a plain cold start vs a SnapStart-style restore of a pre-initialised snapshot.

Each sample is a fresh process with the template's environment (``AWS_ENDPOINT_URL`` pointing
nowhere: nothing may be called). Cold: ``import app`` (the worker's init), then what its first
model call adds (``import anthropic``, building the SDK client). Snapshot: the same init with
``AWS_LAMBDA_INITIALIZATION_TYPE=snap-start`` (the worker pre-imports the SDK into the snapshot),
then only what a restored environment runs: the ``after_restore`` hooks (reseeding the jitter,
dropping the SDK client and cached secrets) and building the SDK client again. The snapshot's
own restore is AWS's work and is not in these figures.

Run: ``python -m benchmarks.worker_start [--runs 7]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORKER_DIR = ROOT / "functions" / "agent_worker"
LAYER_DIR = ROOT / "layers" / "core"
MARKER = "WORKER-START "

CHILD = f"""
import importlib, json, sys, time
sys.path[:0] = sys.argv[1:]
started = time.perf_counter()
app = importlib.import_module("app")
init = time.perf_counter() - started
started = time.perf_counter()
if "anthropic" in sys.modules:  # a restored snapshot: only the hooks run, then a client is made
    app.parts.restore.after_restore()
import anthropic
anthropic.Anthropic(api_key="not-used", base_url="http://127.0.0.1:9", max_retries=0)
first = time.perf_counter() - started
print({MARKER!r} + json.dumps({{"init": init, "first": first}}))
"""


def environment(snapstart: bool) -> dict[str, str]:
    """The template's worker environment (names as the local plan resolves them), aimed at nothing."""
    from lockgate_infra.local.template import LocalPlan

    worker = LocalPlan.from_file(ROOT / "template.yaml").functions["AgentWorkerFunction"]
    env = {
        **os.environ,
        **worker.environment,
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "POWERTOOLS_METRICS_DISABLED": "true",
        "POWERTOOLS_LOG_LEVEL": "ERROR",
    }
    if snapstart:
        env["AWS_LAMBDA_INITIALIZATION_TYPE"] = "snap-start"
    return env


def sample(snapstart: bool) -> dict[str, float]:
    """One fresh process."""
    return run_child(CHILD, environment(snapstart), MARKER)


def run_child(script: str, env: dict[str, str], marker: str, timeout: float = 120) -> dict[str, float]:
    """Run ``script`` in a fresh Python with the worker's and the layer's folders first on its path;
    the JSON it prints after ``marker``."""
    done = subprocess.run(  # noqa: S603 - our own child script
        [sys.executable, "-c", script, str(WORKER_DIR), str(LAYER_DIR)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=timeout,
    )
    line = next(li for li in done.stdout.splitlines() if li.startswith(marker))
    result: dict[str, float] = json.loads(line.removeprefix(marker))
    return result


def measure(runs: int = 7) -> dict[str, dict[str, float]]:
    """Median seconds per phase, alternating the two kinds of process."""
    cold, snap = [], []
    for _ in range(runs):
        cold.append(sample(False))
        snap.append(sample(True))
    return {
        name: {phase: statistics.median(s[phase] for s in samples) for phase in ("init", "first")}
        for name, samples in (("cold", cold), ("snapshot", snap))
    }


def render(result: dict[str, dict[str, float]]) -> str:
    """The table and the ratio."""
    cold, snap = result["cold"], result["snapshot"]
    start_cold = cold["init"] + cold["first"]
    return "\n".join(
        [
            "| worker | init (once per environment, or once per snapshot) | a new environment pays |",
            "|---|---|---|",
            f"| cold start | {cold['init'] * 1000:.0f} ms | {start_cold * 1000:.0f} ms (init + the SDK "
            "on the first call) |",
            f"| SnapStart, pre-initialised | {snap['init'] * 1000:.0f} ms (at publish) | "
            f"{snap['first'] * 1000:.0f} ms (restore hooks + SDK client) |",
            "",
            f"Ratio new-environment start, snapshot / cold: {snap['first'] / start_cold:.3f} "
            "(plus AWS's own snapshot restore, not measured here)",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    """Command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    print(render(measure(parser.parse_args(argv).runs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
