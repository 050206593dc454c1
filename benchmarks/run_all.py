"""``make bench``: run every benchmark and write ``benchmarks/RESULTS.md`` (machine, date, ratios).

Each benchmark runs in its own process (so imports and caches don't leak between them) and its
report is copied in as printed; each prints ratios against a baseline measured in the same run.
A benchmark that misses its target (non-zero exit) is marked, and ``make bench`` fails.

The benchmarks in ``SEPARATE`` need PyPI and take many minutes: ``make bench-setup``
(``--separate``) runs them and rewrites only their sections; ``make bench`` keeps the sections
they last wrote.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
HEADER = (
    "# Benchmark results\n\n"
    "Written by `make bench` on {now}.\n"
    "Machine: {machine}.\n\n"
    "Read the ratios, not the absolute times: each benchmark measures its baseline in the same run.\n"
)

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
SEPARATE: list[tuple[str, list[str]]] = [
    (
        "Setup: `make setup` in a fresh clone, uv (cold and warm cache) vs pip alone",
        ["-m", "benchmarks.setup_time"],
    ),
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


def run(title: str, argv: list[str], stamp: str = "") -> tuple[str, bool]:
    """One benchmark in its own process: its section of RESULTS.md, and whether it met its target."""
    print(f"running: {title}", file=sys.stderr, flush=True)
    started = time.monotonic()
    done = subprocess.run([sys.executable, *argv], cwd=ROOT, capture_output=True, text=True, check=False)  # noqa: S603
    seconds = time.monotonic() - started
    mark = "" if done.returncode == 0 else f" — **missed its target (exit {done.returncode})**"
    command = "python " + " ".join(argv)
    report = done.stdout.strip()
    if done.returncode:  # show why, not only that
        report += "\n--- stderr (last lines) ---\n" + "\n".join(done.stderr.strip().splitlines()[-25:])
    return (
        f"## {title}{mark}\n\n`{command}` ({seconds:.0f} s{stamp})\n\n```\n{report}\n```\n",
        not done.returncode,
    )


def split(results: str) -> tuple[str, list[str]]:
    """RESULTS.md as its header and its sections (each from its ``## `` line)."""
    header, *sections = results.split("\n## ")
    return header.rstrip("\n") + "\n", ["## " + section.rstrip("\n") + "\n" for section in sections]


def separate_sections(results: str) -> list[str]:
    """The sections the separate benchmarks last wrote into ``results``, in their order."""
    found = split(results)[1] if results else []
    return [section for title, _ in SEPARATE for section in found if section.startswith(f"## {title}")]


def main(argv: list[str] | None = None) -> int:
    """Run them all (or, with --separate, the separate ones); 0 when every one met its target."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--separate", action="store_true", help="run the separate benchmarks only (make bench-setup)"
    )
    args = parser.parse_args(argv)
    old = RESULTS.read_text(encoding="utf-8") if RESULTS.exists() else ""
    now = f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC"
    if args.separate:  # the other sections stay as make bench wrote them
        header, others = split(old) if old else (HEADER.format(now=now, machine=machine()), [])
        others = [section for section in others if section not in separate_sections(old)]
        ran = [run(title, argv, f", `make bench-setup` on {now}, {machine()}") for title, argv in SEPARATE]
        sections = [*others, *(section for section, _ in ran)]
    else:  # the separate benchmarks' sections stay as they last wrote them
        header = HEADER.format(now=now, machine=machine())
        ran = [run(title, argv) for title, argv in BENCHMARKS]
        sections = [*(section for section, _ in ran), *separate_sections(old)]
    RESULTS.write_text(header + "\n" + "\n".join(sections), encoding="utf-8")
    print(f"wrote {RESULTS.relative_to(ROOT)}", file=sys.stderr)
    return 0 if all(ok for _, ok in ran) else 1


if __name__ == "__main__":
    sys.exit(main())
