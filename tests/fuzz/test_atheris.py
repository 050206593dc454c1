"""Each atheris target, briefly: libFuzzer mutates seeded valid inputs; a crash fails the test.

Longer runs: ``PYTHONPATH=. .venv/bin/python -m tests.fuzz.atheris_targets TARGET``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # fuzzing/chaos/load/benchmarks: `make check`, not `make test`

ROOT = Path(__file__).resolve().parents[2]
pytest.importorskip("atheris", reason="atheris installs on Linux only (see pyproject)")


@pytest.mark.parametrize("target", ["webhook", "link", "json", "tool-args"])
def test_given_mutated_inputs_when_fuzzed_then_only_clean_rejections(target: str, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'workflows'}"}
    done = subprocess.run(  # noqa: S603 - our own module, fixed arguments
        [
            sys.executable,
            "-m",
            "tests.fuzz.atheris_targets",
            target,
            "-runs=20000",
            "-max_len=4096",
            "-seed=7",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "DONE" in done.stderr
