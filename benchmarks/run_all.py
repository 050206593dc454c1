"""``make bench``: run every benchmark and write ``benchmarks/RESULTS.md`` (machine, date, ratios).

Each benchmark runs in its own process (so imports and caches don't leak between them) and its
report is copied in as printed; each prints ratios against a baseline measured in the same run.
A benchmark that misses its target (non-zero exit) is marked, and ``make bench`` fails.

The benchmarks in ``SEPARATE`` need PyPI or take many minutes: ``make bench-NAME``
(``--separate NAME``: setup, latency, load-20k) runs one and rewrites only its section; ``make bench``
keeps the sections they last wrote.
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
    ("MCP: the worker's cold start and package size with the MCP client", ["-m", "benchmarks.mcp_cost"]),
    (
        "Worker memory: Lambda dollars per event by memory size, batches side by side",
        ["-m", "benchmarks.worker_memory"],
    ),
    ("Model: prompt caching per example run", ["-m", "benchmarks.prompt_caching"]),
    ("Prices: the generated table vs genai-prices in the worker", ["-m", "benchmarks.price_source"]),
    ("Model: dollars per 100 shop events, controls added in turn", ["-m", "benchmarks.model_costs"]),
    ("Admission: DynamoDB calls per model call, budget + rate limits", ["-m", "benchmarks.admission_calls"]),
    ("Cost floor: AWS calls and write units per example event, as deployed", ["-m", "benchmarks.cost_floor"]),
    ("Approvals: requests and dollars per approved action vs Step Functions", ["-m", "benchmarks.approvals"]),
    ("Load: 3 repeats of 2,000 deliveries from 20 senders on the local stack", ["-m", "benchmarks.load"]),
    ("Cost: `lockgate cost`, AWS dollars per month", ["-c", COST]),
]
# (name, title, argv): `make bench-NAME` runs one and rewrites its section alone.
SEPARATE: list[tuple[str, str, list[str]]] = [
    (
        "setup",
        "Setup: `make setup` in a fresh clone, uv (cold and warm cache) vs pip alone",
        ["-m", "benchmarks.setup_time"],
    ),
    (
        "latency",
        "Latency: webhook receipt to reply sent, steady and 10x bursts, modelled AWS and model latency",
        ["-m", "benchmarks.latency"],
    ),
    (
        "load-20k",
        "Load at ten times today's: 20,000 deliveries with faults and retries, one repeat",
        ["-m", "benchmarks.load", "--deliveries", "20000", "--repeats", "1", "--rounds", "2000", "--faults"],
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
    # The workflows packages (the shop, triage) are on .venv's path: make setup put them there.
    done = subprocess.run(  # noqa: S603 - this checkout's own benchmarks
        [sys.executable, *argv], cwd=ROOT, capture_output=True, text=True, check=False
    )
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


def separate_sections(results: str, fresh: dict[str, str] | None = None) -> list[str]:
    """The separate benchmarks' sections in their order: ``fresh`` ones (by title), else as they were
    last written into ``results``."""
    found = split(results)[1] if results else []
    fresh = fresh or {}
    return [
        fresh.get(title) or next((s for s in found if s.startswith(f"## {title}")), "")
        for _, title, _ in SEPARATE
        if title in fresh or any(s.startswith(f"## {title}") for s in found)
    ]


def _results() -> str:
    return RESULTS.read_text(encoding="utf-8") if RESULTS.exists() else ""


def main(argv: list[str] | None = None) -> int:
    """Run them all (or, with --separate, the separate ones); 0 when every one met its target."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--separate",
        nargs="?",
        const="setup",
        choices=[name for name, _, _ in SEPARATE],
        help="run one separate benchmark only (make bench-NAME); setup when no name is given",
    )
    args = parser.parse_args(argv)
    now = f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC"
    if args.separate:  # the other sections stay as they were last written
        stamp = f", `make bench-{args.separate}` on {now}, {machine()}"
        ran = [run(title, argv, stamp) for name, title, argv in SEPARATE if name == args.separate]
        old = _results()  # read after the run: another make bench-* may have written meanwhile
        header, others = split(old) if old else (HEADER.format(now=now, machine=machine()), [])
        others = [section for section in others if section not in separate_sections(old)]
        fresh = {title: ran[0][0] for name, title, _ in SEPARATE if name == args.separate}
        sections = [*others, *separate_sections(old, fresh)]
    else:  # the separate benchmarks' sections stay as they last wrote them
        header = HEADER.format(now=now, machine=machine())
        ran = [run(title, argv) for title, argv in BENCHMARKS]
        sections = [*(section for section, _ in ran), *separate_sections(_results())]
    RESULTS.write_text(header + "\n" + "\n".join(sections), encoding="utf-8")
    print(f"wrote {RESULTS.relative_to(ROOT)}", file=sys.stderr)
    return 0 if all(ok for _, ok in ran) else 1


if __name__ == "__main__":
    sys.exit(main())
