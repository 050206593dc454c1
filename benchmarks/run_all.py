"""``make bench``: run every benchmark and write ``benchmarks/RESULTS.md`` (machine, date, ratios).

Each benchmark runs in its own process (so imports and caches don't leak between them) and its
report is copied in as printed; each prints ratios against a baseline measured in the same run.
A benchmark that misses its target (non-zero exit) is marked, and ``make bench`` fails.
"""

from __future__ import annotations

import datetime as dt
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "RESULTS.md"

COST = "from lockgate_infra.cli.main import main; raise SystemExit(main(['cost']))"
BENCHMARKS: list[tuple[str, list[str]]] = [
    (
        "Receipt: AWS calls and time per delivery vs Powertools idempotency",
        ["-m", "benchmarks.receipt_calls"],
    ),
    ("Cold start: import time per handler vs bare boto3", ["-m", "benchmarks.cold_start"]),
    ("Worker start: cold vs a SnapStart-style pre-initialised restore", ["-m", "benchmarks.worker_start"]),
    (
        "Worker memory: Lambda dollars per event by memory size, batches side by side",
        ["-m", "benchmarks.worker_memory"],
    ),
    ("Model: prompt caching per example run", ["-m", "benchmarks.prompt_caching"]),
    ("Model: dollars per 100 shop events, controls added in turn", ["-m", "benchmarks.model_costs"]),
    ("Admission: DynamoDB calls per model call, budget + rate limits", ["-m", "benchmarks.admission_calls"]),
    ("Cost floor: AWS calls and write units per example event, as deployed", ["-m", "benchmarks.cost_floor"]),
    ("Approvals: requests and dollars per approved action vs Step Functions", ["-m", "benchmarks.approvals"]),
    ("Load: 3 repeats of 2,000 deliveries from 20 senders on the local stack", ["-m", "benchmarks.load"]),
    ("Cost: `lockgate cost`, AWS dollars per month", ["-c", COST]),
]


def machine() -> str:
    """One line about where the figures come from."""
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    system = f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs {cpu}"
    return f"{system}, Python {platform.python_version()}"


def main() -> int:
    """Run them all; 0 when every benchmark met its target."""
    sections, failed = [], []
    for title, argv in BENCHMARKS:
        print(f"running: {title}", file=sys.stderr, flush=True)
        started = time.monotonic()
        done = subprocess.run([sys.executable, *argv], cwd=ROOT, capture_output=True, text=True, check=False)  # noqa: S603
        seconds = time.monotonic() - started
        mark = "" if done.returncode == 0 else f" — **missed its target (exit {done.returncode})**"
        if done.returncode:
            failed.append(title)
        command = "python " + " ".join(argv)
        report = done.stdout.strip()
        if done.returncode:  # show why, not only that
            report += "\n--- stderr (last lines) ---\n" + "\n".join(done.stderr.strip().splitlines()[-25:])
        sections.append(f"## {title}{mark}\n\n`{command}` ({seconds:.0f} s)\n\n```\n{report}\n```\n")
    header = (
        "# Benchmark results\n\n"
        f"Written by `make bench` on {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC.\n"
        f"Machine: {machine()}.\n\n"
        "Read the ratios, not the absolute times: each benchmark measures its baseline in the same run.\n"
    )
    RESULTS.write_text(header + "\n" + "\n".join(sections), encoding="utf-8")
    print(f"wrote {RESULTS.relative_to(ROOT)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
