"""Saved eval results (JSON, one file per suite run) and the prompt version they are filed under."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from lockgate.evals.runner import EvalReport


def prompt_version(system: str, tools: Sequence[Mapping[str, Any]]) -> str:
    """12 hex digits of SHA-256 over the system prompt and the tool schemas the model sees."""
    canonical = json.dumps({"system": system, "tools": list(tools)}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:12]


class ResultsStore:
    """Eval results as JSON files in one directory (``.lockgate/evals/`` for the CLI)."""

    def __init__(self, directory: str | Path) -> None:
        self._directory = Path(directory)

    def save(self, report: EvalReport) -> Path:
        """Write the report; returns the file (task, date, model and prompt version in its name)."""
        self._directory.mkdir(parents=True, exist_ok=True)
        stamp = report.date.replace("-", "").replace(":", "")
        name = f"{_slug(report.task)}-{stamp}-{_slug(report.model)}-{report.prompt_version}"
        path = self._directory / f"{name}.json"
        n = 1
        while path.exists():  # two runs in one second: keep both
            n += 1
            path = self._directory / f"{name}-{n}.json"
        path.write_text(json.dumps(report.as_dict(), indent=2) + "\n", encoding="utf-8")
        return path

    def history(self, task: str) -> list[dict[str, Any]]:
        """Every saved result for a task, oldest first."""
        if not self._directory.is_dir():
            return []
        found = []
        for path in sorted(self._directory.glob(f"{_slug(task)}-*.json")):
            data = json.loads(path.read_text(encoding="utf-8"))
            if data.get("task") == task:
                found.append(data)
        return sorted(found, key=lambda d: str(d.get("date", "")))


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "-", text).strip("-") or "unnamed"
