"""The setup benchmark's report and how `make bench-setup` and `make bench` share benchmarks/RESULTS.md.

The figures are made up: the benchmark itself installs from PyPI for minutes (`make bench-setup`).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import run_all, setup_time
from benchmarks.setup_time import BASELINE, NAMES, Sample, render

SAME = frozenset({"boto3==1.43.0", "moto==5.2.5"})


def repeat(walls: tuple[float, float, float, float], packages: frozenset[str] = SAME) -> dict[str, Sample]:
    """One repeat's samples (uv cold, uv warm, uv cold on CI, pip cold), CPU half the wall time."""
    return {
        name: Sample(name, wall, wall / 2, 3.0, packages, 15000, 1.0, (700.0, 0.0))
        for name, wall in zip(NAMES, walls, strict=True)
    }


def test_given_two_repeats_then_each_ratio_is_taken_within_its_repeat_against_pip_cold() -> None:
    # Given a slow second repeat (a busy machine): pip 150 s then 300 s, uv cold 60 s then 120 s
    repeats = [repeat((60, 20, 100, 150)), repeat((120, 40, 200, 300))]
    # When the report is written
    report, ok = render(repeats, "0123456789abcdef", (2.0, 3.0))
    # Then the ratios are the same in both repeats (0.40), the times show the spread
    rows = {line.split(" | ")[0].strip("| "): line for line in report.splitlines() if line.startswith("| ")}
    assert (
        rows["uv, cold cache"]
        == "| uv, cold cache | 90.0 (60.0–120.0) | 45.0 (30.0–60.0) | 0.40 | 0.40 | 3.0 |"
    )
    assert rows[BASELINE].endswith("| 1.00 | 1.00 | 3.0 |")
    assert "the same names and versions with uv and with pip" in report
    assert report.splitlines()[-1].endswith("0.40 — met")
    assert ok


def test_given_uv_and_pip_installing_different_versions_then_the_benchmark_fails() -> None:
    other = frozenset({"boto3==1.43.0", "moto==5.2.4"})
    samples = repeat((60, 20, 100, 150))
    samples[BASELINE] = Sample(BASELINE, 150, 75, 3.0, other, 15000, 1.0, (0.0, 0.0))
    report, ok = render([samples], "0123456789abcdef", (2.0, 3.0))
    assert "NOT the same" in report
    assert not ok


def test_given_uv_cold_over_half_of_pip_then_the_target_is_missed() -> None:
    report, ok = render([repeat((100, 20, 100, 150))], "0123456789abcdef", (2.0, 3.0))
    assert report.splitlines()[-1].endswith("0.67 — NOT met")
    assert not ok


def test_the_clone_gets_a_strangers_environment_with_its_own_caches(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Given this process runs under make, in the project's venv
    ours = str(setup_time.ROOT / ".venv" / "bin")
    monkeypatch.setenv("PATH", f"{ours}:/usr/bin")
    monkeypatch.setenv("MAKEFLAGS", "-n")
    monkeypatch.setenv("MAKELEVEL", "1")
    monkeypatch.setenv("VIRTUAL_ENV", str(setup_time.ROOT / ".venv"))
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    # Then the clone's make sees none of it, and the caches given
    env = setup_time.environment(tmp_path)
    assert env["PATH"] == "/usr/bin"
    assert not {"MAKEFLAGS", "MAKELEVEL", "VIRTUAL_ENV", "PYTHONDONTWRITEBYTECODE"} & set(env)
    assert (env["UV_CACHE_DIR"], env["PIP_CACHE_DIR"]) == (str(tmp_path / "uv"), str(tmp_path / "pip"))
    # And as on CI, Python keeps no bytecode where the set-up says so
    assert setup_time.environment(tmp_path, compiles=True)["PYTHONDONTWRITEBYTECODE"] == "1"


def fake_run(title: str, argv: list[str], stamp: str = "") -> tuple[str, bool]:
    return f"## {title}\n\n`python {' '.join(argv)}` (1 s{stamp})\n\n```\nnew {title}\n```\n", True


@pytest.fixture
def results(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """RESULTS.md with one make-bench section and an old setup section; two short benchmark lists."""
    path = tmp_path / "RESULTS.md"
    monkeypatch.setattr(run_all, "RESULTS", path)
    monkeypatch.setattr(run_all, "ROOT", tmp_path)
    monkeypatch.setattr(run_all, "run", fake_run)
    monkeypatch.setattr(run_all, "BENCHMARKS", [("Receipt", ["-m", "r"]), ("Load", ["-m", "l"])])
    monkeypatch.setattr(
        run_all, "SEPARATE", [("setup", "Setup", ["-m", "s"]), ("latency", "Latency", ["-m", "t"])]
    )
    path.write_text(
        "# Benchmark results\n\nWritten by `make bench` on then.\n\n"
        "## Receipt\n\n```\nold Receipt\n```\n\n## Setup\n\n```\nold Setup\n```\n",
        encoding="utf-8",
    )
    return path


def test_make_bench_rewrites_its_sections_and_keeps_the_setup_section(results: Path) -> None:
    assert run_all.main([]) == 0
    text = results.read_text(encoding="utf-8")
    assert "old Receipt" not in text and "new Receipt" in text and "new Load" in text
    assert "old Setup" in text and "new Setup" not in text
    assert text.index("new Load") < text.index("old Setup")


def test_make_bench_setup_rewrites_only_the_setup_section(results: Path) -> None:
    assert run_all.main(["--separate"]) == 0
    text = results.read_text(encoding="utf-8")
    assert "Written by `make bench` on then." in text and "old Receipt" in text
    assert "old Setup" not in text and "new Setup" in text and "`make bench-setup` on " in text
    assert text.count("## Setup") == 1


def test_make_bench_latency_adds_its_section_after_setup_and_leaves_the_others(results: Path) -> None:
    # Given RESULTS.md with make bench's sections and an old setup section, and no latency section yet
    # When `make bench-latency` runs
    assert run_all.main(["--separate", "latency"]) == 0

    # Then its section is new, in SEPARATE's order, and every other section is as it was
    text = results.read_text(encoding="utf-8")
    assert "old Receipt" in text and "old Setup" in text and "new Latency" in text
    assert "`make bench-latency` on " in text
    assert text.index("old Setup") < text.index("new Latency")
    assert text.count("## Latency") == 1 and text.count("## Setup") == 1
