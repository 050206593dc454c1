"""A function laid out as Lambda loads it, to run its handler the way a deployed stack would.

Its CodeUri is copied with symlinks followed (as ``sam build`` does) to stand for ``/var/task``, the
core layer to stand for ``/opt/python``, and the handler runs in a fresh interpreter that can
import those two and the third-party packages of this environment, and nothing else of this
repository. The embedded stack imports handlers from the repository, where everything is
importable and the config path is absolute; this shows what a deployed function would be missing
(a config file, the workflows package, the eval harness) before a deploy does.

Which third-party packages a function ships is what its requirements.txt says; `make deploy-test`
checks those in the real ``sam build`` output.
"""

from __future__ import annotations

import json
import shutil
import site
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lockgate_infra.local.functions import FunctionPlan

_NOT_PACKAGED = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
RESULT = "LAYOUT-RESULT "  # the line the script's outcome is printed on, apart from the handler's logs

# Run the handler once with a context like Lambda's; print the outcome on one marked line.
_INVOKE = """
import json, app

class Context:
    function_name = {function!r}
    memory_limit_in_mb = {memory}
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:" + {function!r}
    aws_request_id = "layout-request"

    def get_remaining_time_in_millis(self):
        return {remaining_ms}

try:
    outcome = {{"returned": app.handler({event!r}, Context())}}
except Exception as exc:
    outcome = {{"raised": type(exc).__name__, "message": str(exc)[:2000]}}
print({marker!r} + json.dumps(outcome, default=str))
"""


@dataclass(frozen=True)
class LambdaLayout:
    """``/var/task`` and ``/opt/python`` for one function, as folders under a scratch directory."""

    function: FunctionPlan
    task: Path
    layer: Path

    @classmethod
    def build(cls, function: FunctionPlan, layer_source: Path, scratch: Path) -> LambdaLayout:
        """Copy the function's code (following symlinks) and the layer's source into ``scratch``."""
        task, layer = scratch / function.logical_id / "task", scratch / "opt" / "python"
        shutil.copytree(function.code_dir, task, ignore=_NOT_PACKAGED)
        if not layer.exists():
            shutil.copytree(layer_source, layer, ignore=_NOT_PACKAGED)
        return cls(function, task, layer)

    def run(
        self, script: str, environment: Mapping[str, str], timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        """Run ``script`` in ``/var/task`` with the function's environment and only the layout importable."""
        path = [str(self.task), str(self.layer)]
        prelude = f"import sys; sys.path[:0] = {path!r}; sys.path.extend({_third_party()!r})\n"
        env = {**self.function.environment, **environment, "LAMBDA_TASK_ROOT": str(self.task)}
        return subprocess.run(  # noqa: S603 - this interpreter, our own script
            [sys.executable, "-S", "-c", prelude + script],  # -S: no site, so no editable installs
            cwd=self.task,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def invoke(
        self, event: Mapping[str, Any], environment: Mapping[str, str], timeout: float = 300
    ) -> dict[str, Any]:
        """The handler's outcome: ``{"returned": ...}`` or ``{"raised": name, "message": ...}``."""
        script = _INVOKE.format(
            function=self.function.logical_id,
            memory=self.function.memory_mb,
            remaining_ms=int(timeout * 1000),
            event=dict(event),
            marker=RESULT,
        )
        done = self.run(script, environment, timeout + 30)
        lines = [line for line in done.stdout.splitlines() if line.startswith(RESULT)]
        if done.returncode != 0 or not lines:
            raise RuntimeError(
                f"{self.function.logical_id} did not run (exit {done.returncode}):\n{done.stderr}"
            )
        outcome: dict[str, Any] = json.loads(lines[-1].removeprefix(RESULT))
        return outcome


def _third_party() -> list[str]:
    """This environment's site-packages, as plain path entries (their .pth files are not run)."""
    return [p for p in site.getsitepackages() if Path(p).is_dir()]
