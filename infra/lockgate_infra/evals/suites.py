"""Where a task's eval cases are: the ``evals/`` folder of each workflows package, in the config's order."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from pathlib import Path

from lockgate.config import load_config
from lockgate.evals import Suite, load_suite
from lockgate_infra.evals.models import EvalSetupError


def evals_dirs(config_path: Path) -> list[Path]:
    """Each workflows package's ``evals/`` folder, in the config's order."""
    packages = load_config(config_path).workflows.packages
    if not packages:
        raise EvalSetupError("no [workflows] packages in the config, so there are no eval cases")
    return [
        Path(str(importlib.import_module(package).__file__)).resolve().parent / "evals"
        for package in packages
    ]


def find_suite(task: str, directories: Path | Sequence[Path]) -> Suite:
    """The suite file in ``directories`` (each workflow's ``evals/``) whose ``task`` is this task."""
    folders = [directories] if isinstance(directories, Path) else list(directories)
    matches = []
    for path in sorted(p for folder in folders for p in [*folder.glob("*.toml"), *folder.glob("*.json")]):
        text = path.read_text(encoding="utf-8")
        if "[[cases]]" in text or '"cases"' in text:
            suite = load_suite(path)
            if suite.task == task:
                matches.append(suite)
    if not matches:
        where = ", ".join(str(folder) for folder in folders)
        raise EvalSetupError(f"no eval cases for task {task!r} in {where} (a *.toml with task = {task!r})")
    if len(matches) > 1:
        raise EvalSetupError(
            f"several case files are for {task!r}: {', '.join(s.origin for s in matches)}; use --cases"
        )
    return matches[0]


def suite_folder(suite: Suite) -> Path | None:
    """Where a suite's calibration files sit: beside its case file (its workflow's ``evals/``)."""
    return None if suite.origin == "<memory>" else Path(suite.origin).parent
