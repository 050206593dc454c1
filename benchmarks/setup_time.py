"""Fresh-clone setup: `make setup` in a new clone of HEAD, with uv (cold and warm cache) vs pip alone.

Each sample clones HEAD (committed work only) into a temporary folder and times `make setup` there,
as a new user's first `make demo` or `make test` does: wall time, and CPU time (user + system of
make and everything it ran, from the children's rusage; on a shared machine the CPU time moves
less than the wall time). Four set-ups, each in its own clone:

- uv, cold cache: a new user's machine: empty uv and pip caches (pip fetches uv, uv fetches the
  lock), Python free to write bytecode, so each module is compiled when first imported;
- uv, warm cache: the same, a second clone on the same machine;
- uv, cold cache, CI: ``PYTHONDONTWRITEBYTECODE=1`` (as on CI and this machine), so uv compiles all
  15,000 files at install, as pip does;
- pip, cold cache: ``make setup INSTALLER=pip`` (the fallback where uv cannot be had), empty cache.

The baseline is pip, cold, measured in the same repeat; each ratio is taken within a repeat. After
each sample the new ``.venv`` must import the project (its CPU time is shown: where bytecode waits
for the first import, that import pays for it) and hold the same packages at the same versions
(uv itself aside). It needs PyPI and took 12 minutes a repeat on 2 busy cores, so it is not in
``make bench``: ``make bench-setup`` runs it and records it in ``benchmarks/RESULTS.md``.

Run: ``python -m benchmarks.setup_time [--repeats 2]``.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Setup:
    """One way to set up a fresh clone."""

    name: str
    installer: str  # make setup INSTALLER=...
    cold: bool  # empty caches first, or the caches of the sample before
    compiles: bool  # PYTHONDONTWRITEBYTECODE=1: Python keeps no bytecode, so setup compiles it all


SETUPS = [
    Setup("uv, cold cache", "uv", cold=True, compiles=False),
    Setup("uv, warm cache", "uv", cold=False, compiles=False),
    Setup("uv, cold cache, CI", "uv", cold=True, compiles=True),
    Setup("pip, cold cache", "pip", cold=True, compiles=False),
]
NAMES = [setup.name for setup in SETUPS]
BASELINE = "pip, cold cache"
# A new user's fresh clone is set up in under half of pip's time, with uv's cache empty.
TARGET = "uv, cold cache"
TARGET_RATIO = 0.5
IMPORTS = "import lockgate, lockgate_infra, shop, moto, anthropic"
# What a `make bench-setup` (or a venv) around this process would hand the clone's make.
LEFT_OUT = ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES", "VIRTUAL_ENV", "PYTHONPATH")


@dataclass(frozen=True)
class Sample:
    """One `make setup` in a fresh clone."""

    setup: str
    wall: float
    cpu: float
    first_import: float  # CPU seconds of the first import of the project's stack afterwards
    packages: frozenset[str]  # name==version, as pip lists them (editables and uv left out)
    compiled: int  # .pyc files under site-packages
    load: float  # the 1-minute load average as it started
    cached: tuple[float, float]  # MB in the uv and pip caches afterwards


def environment(caches: Path, compiles: bool = False) -> dict[str, str]:
    """This process's environment for a stranger's shell: no make of ours around it, no venv of ours."""
    ours = str(ROOT / ".venv" / "bin")
    env = {k: v for k, v in os.environ.items() if k not in (*LEFT_OUT, "PYTHONDONTWRITEBYTECODE")}
    if compiles:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p != ours)
    env["UV_CACHE_DIR"] = str(caches / "uv")
    env["PIP_CACHE_DIR"] = str(caches / "pip")
    return env


def clone(commit: str, into: Path) -> Path:
    """A fresh clone of ``commit``, as `git clone` gives a new user."""
    folder = into / "lockgate"
    subprocess.run(["git", "clone", "--quiet", "--no-checkout", str(ROOT), str(folder)], check=True)  # noqa: S607
    subprocess.run(["git", "-C", str(folder), "checkout", "--quiet", "--detach", commit], check=True)  # noqa: S607
    return folder


def timed(argv: list[str], folder: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of a command and all it runs, in ``folder``; fails loudly if it fails."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    done = subprocess.run(  # noqa: S603 - make and the clone's own python
        argv, cwd=folder, env=env, capture_output=True, text=True, check=False, timeout=1800
    )
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        raise RuntimeError(f"{' '.join(argv)} failed in {folder}:\n{done.stdout}\n{done.stderr}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def inspect(folder: Path, env: dict[str, str]) -> tuple[frozenset[str], int]:
    """What the new .venv holds, and how many files it has compiled."""
    python = str(folder / ".venv" / "bin" / "python")
    listed = subprocess.run(  # noqa: S603 - the clone's own pip
        [python, "-m", "pip", "list", "--format=freeze", "--exclude-editable"],
        cwd=folder, env=env, capture_output=True, text=True, check=True, timeout=300,
    ).stdout.split()  # fmt: skip
    packages = frozenset(p.lower() for p in listed if not p.lower().startswith("uv=="))
    compiled = sum(1 for _ in (folder / ".venv" / "lib").rglob("*.pyc"))
    return packages, compiled


def megabytes(folder: Path) -> float:
    """What a folder holds, in MB (0 when it is not there)."""
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file() and not f.is_symlink()) / 1e6


def sample(commit: str, setup: Setup, caches: Path, scratch: Path) -> Sample:
    """`make setup` once in a new clone, then the first import; the clone goes, the caches stay."""
    env = environment(caches, setup.compiles)
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(dir=scratch) as where:
        folder = clone(commit, Path(where))
        make = ["make", "--no-print-directory", "setup", f"INSTALLER={setup.installer}"]
        wall, cpu = timed(make, folder, env)
        _, first_import = timed([str(folder / ".venv" / "bin" / "python"), "-c", IMPORTS], folder, env)
        packages, compiled = inspect(folder, env)
    cached = (megabytes(caches / "uv"), megabytes(caches / "pip"))
    return Sample(setup.name, wall, cpu, first_import, packages, compiled, load, cached)


def repeat(commit: str, scratch: Path) -> dict[str, Sample]:
    """Each set-up once, in order: a cold one starts from empty caches, a warm one reuses the last."""
    samples: dict[str, Sample] = {}
    caches = scratch
    for setup in SETUPS:
        if setup.cold:
            caches = Path(tempfile.mkdtemp(prefix="caches-", dir=scratch))
        print(f"  {setup.name} ...", file=sys.stderr, flush=True)
        done = samples[setup.name] = sample(commit, setup, caches, scratch)
        print(f"  {setup.name}: {done.wall:.1f} s wall, {done.cpu:.1f} s CPU", file=sys.stderr, flush=True)
    return samples


def spread(values: list[float], digits: int = 1) -> str:
    """Median (min–max), or the median alone where they round alike."""
    median, low, high = (f"{v:.{digits}f}" for v in (statistics.median(values), min(values), max(values)))
    return median if low == high else f"{median} ({low}–{high})"


def render(repeats: list[dict[str, Sample]], commit: str, load: tuple[float, float]) -> tuple[str, bool]:
    """The report, and whether the target was met and every environment was the same."""
    lines = [
        f"Fresh-clone `make setup` of {commit[:12]}, {len(repeats)} repeat(s), each set-up in a new clone;",
        f"{os.cpu_count()} CPUs, load average {load[0]:.1f} before and {load[1]:.1f} after "
        "(other work shares this machine: read the CPU time beside the wall time).",
        "",
        f"| set-up | wall s | CPU s | wall ÷ {BASELINE} | CPU ÷ {BASELINE} | first import, CPU s |",
        "|---|---|---|---|---|---|",
    ]
    for setup in NAMES:
        walls = [r[setup].wall for r in repeats]
        cpus = [r[setup].cpu for r in repeats]
        wall_ratio = [r[setup].wall / r[BASELINE].wall for r in repeats]
        cpu_ratio = [r[setup].cpu / r[BASELINE].cpu for r in repeats]
        imports = [r[setup].first_import for r in repeats]
        cells = [
            setup,
            spread(walls),
            spread(cpus),
            spread(wall_ratio, 2),
            spread(cpu_ratio, 2),
            spread(imports),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    everything = [s for r in repeats for s in r.values()]
    same = len({s.packages for s in everything}) == 1
    lines += [
        "",
        "Median (min–max) over the repeats; each ratio is taken within one repeat. First import: "
        f"`{IMPORTS}` in the new .venv, once (it compiles what it imports where setup did not).",
        f"Every .venv: {len(everything[0].packages)} packages from requirements-dev.txt, "
        + ("the same names and versions with uv and with pip" if same else "**NOT the same with uv and pip**")
        + "; .pyc files: "
        + ", ".join(f"{setup} {spread([r[setup].compiled for r in repeats], 0)}" for setup in NAMES)
        + ".",
        "Caches after each set-up (MB, uv / pip): "
        + ", ".join(
            f"{setup} {repeats[-1][setup].cached[0]:.0f} / {repeats[-1][setup].cached[1]:.0f}"
            for setup in NAMES
        )
        + " (a pip cache left empty makes its warm run a second cold one).",
        "Each sample, wall / CPU s (load average as it started): "
        + "; ".join(
            ", ".join(f"{s.setup} {s.wall:.0f} / {s.cpu:.0f} ({s.load:.1f})" for s in r.values())
            for r in repeats
        ),
    ]
    ratio = statistics.median(r[TARGET].wall / r[BASELINE].wall for r in repeats)
    met = ratio <= TARGET_RATIO
    verdict = "met" if met else "NOT met"
    lines.append(f"Target: {TARGET} ÷ {BASELINE}, wall, median ≤ {TARGET_RATIO}: {ratio:.2f} — {verdict}")
    return "\n".join(lines), met and same


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2, help="each set-up this many times (default 2)")
    args = parser.parse_args(argv)
    commit = subprocess.run(
        ["git", "rev-parse", "HEAD"],  # noqa: S607
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="setup-time-") as scratch:
        repeats = []
        for number in range(args.repeats):
            print(f"repeat {number + 1} of {args.repeats}", file=sys.stderr, flush=True)
            repeats.append(repeat(commit, Path(scratch)))
    report, ok = render(repeats, commit, (before, os.getloadavg()[0]))
    print(report)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
