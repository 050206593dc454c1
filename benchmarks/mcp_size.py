"""The size ``mcp`` adds to the agent worker's package: its locked dependencies, laid out as sam build does.

The worker's lock is split by its ``# via`` lines: what is needed without ``mcp`` (reached from
``-r requirements.in`` through anything but ``mcp``) and what only ``mcp`` brings. Each set is
installed with ``--no-deps --require-hashes`` into a fresh folder, without bytecode (sam build
unpacks wheels as they are), then measured on disk and as a deflated zip.
"""

from __future__ import annotations

import io
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "functions" / "agent_worker" / "requirements.txt"
UV = ROOT / ".venv" / "bin" / "uv"


def canonical(name: str) -> str:
    """A distribution name as the lock's ``via`` lines compare it."""
    return re.sub(r"[-_.]+", "-", name).lower()


def blocks(text: str) -> dict[str, list[str]]:
    """Each locked distribution's lines: its pin, hashes and ``# via`` comments."""
    found: dict[str, list[str]] = {}
    current: str | None = None
    for line in text.splitlines():
        pinned = re.match(r"^([A-Za-z0-9_.-]+)==", line)
        if pinned:
            current = canonical(pinned.group(1))
            found[current] = [line]
        elif current is not None and line.startswith(" "):
            found[current].append(line)
        else:
            current = None
    return found


def parents(lines: list[str]) -> set[str]:
    """What a block says it is ``via``: ``-r requirements.in`` or distributions (constraints ignored)."""
    via, inside = set(), False
    for line in lines[1:]:
        text = line.strip()
        if text.startswith("# via"):
            inside = True
            text = text.removeprefix("# via").strip()
        elif inside and text.startswith("#"):
            text = text.lstrip("#").strip()
        else:
            continue
        if text and not text.startswith("-c"):
            via.add(text if text.startswith("-r") else canonical(text))
    return via


def without_mcp(locked: dict[str, list[str]]) -> set[str]:
    """The distributions the worker needs when it does not depend on ``mcp``."""
    needed = {n for n, lines in locked.items() if n != "mcp" and "-r requirements.in" in parents(lines)}
    while True:
        more = {n for n, lines in locked.items() if n not in needed and parents(lines) & needed}
        if not more:
            return needed
        needed |= more


@dataclass(frozen=True)
class Size:
    """An installed set of distributions: how many, bytes on disk and zipped."""

    distributions: int
    disk: int
    zipped: int


def install(names: set[str], locked: dict[str, list[str]]) -> Size:
    """Install ``names`` from the lock into a fresh folder and measure it."""
    with tempfile.TemporaryDirectory() as tmp:
        requirements, target = Path(tmp) / "requirements.txt", Path(tmp) / "site"
        requirements.write_text("\n".join(line for n in sorted(names) for line in locked[n]) + "\n")
        if UV.exists():
            command = [str(UV), "pip", "install", "--quiet", "--no-config", "--python", sys.executable]
            command += ["--default-index", "https://pypi.org/simple", "--target", str(target)]
        else:
            command = [
                sys.executable,
                "-m",
                "pip",
                "install",
                "--quiet",
                "--no-compile",
                "--target",
                str(target),
            ]
        command += ["--no-deps", "--require-hashes", "--only-binary", ":all:", "-r", str(requirements)]
        subprocess.run(command, check=True, timeout=900)  # noqa: S603 - our own lock
        shutil.rmtree(target / "bin", ignore_errors=True)  # console scripts: not part of a Lambda package
        files = [p for p in target.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in files:
                archive.write(path, path.relative_to(target))
        return Size(len(names), sum(p.stat().st_size for p in files), len(buffer.getvalue()))


def measure_size() -> dict[str, object]:
    """The worker's dependencies with and without what only ``mcp`` brings."""
    locked = blocks(LOCK.read_text(encoding="utf-8"))
    base = without_mcp(locked)
    return {
        "only_mcp": sorted(set(locked) - base),
        "without": install(base, locked),
        "with": install(set(locked), locked),
    }


def render_size(result: dict[str, object]) -> str:
    """The size table and its ratios."""
    without, with_mcp = result["without"], result["with"]
    assert isinstance(without, Size) and isinstance(with_mcp, Size)
    mb = lambda n: f"{n / 1_000_000:.1f} MB"  # noqa: E731
    return "\n".join(
        [
            "| worker dependencies | distributions | on disk | zipped |",
            "|---|---|---|---|",
            f"| without mcp | {without.distributions} | {mb(without.disk)} | {mb(without.zipped)} |",
            f"| with mcp | {with_mcp.distributions} | {mb(with_mcp.disk)} | {mb(with_mcp.zipped)} |",
            "",
            f"Only for mcp: {', '.join(result['only_mcp'])}",  # type: ignore[arg-type]
            f"Ratio on disk, with / without: {with_mcp.disk / without.disk:.3f} "
            f"(+{mb(with_mcp.disk - without.disk)}); zipped: {with_mcp.zipped / without.zipped:.3f} "
            f"(+{mb(with_mcp.zipped - without.zipped)})",
        ]
    )
