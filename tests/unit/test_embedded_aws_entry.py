"""Every embedded AWS goes through ``lockgate_infra.local.fidelity``: no other module starts moto.

A test, rig or tool that called ``mock_aws`` (or built moto's server) itself would run on moto
without the fixes the conformance suite checks, and could pass by testing moto's deviations.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SEARCHED = ("infra", "tests", "benchmarks", "workflows", "layers")
ENTRY = ROOT / "infra" / "lockgate_infra" / "local" / "fidelity.py"
SERVER = ROOT / "infra" / "lockgate_infra" / "local" / "moto_server.py"
# The cold-start child counts the AWS calls a handler's import makes, inside a function's own
# build (where lockgate_infra is not importable); it writes nothing that the fixes concern.
EXEMPT = {ROOT / "benchmarks" / "cold_start_children.py"}
STARTS_MOTO = re.compile(r"\bmock_aws\(|import mock_aws|\bcreate_backend_app\b|\bThreadedMotoServer\b")


def test_only_the_fidelity_module_and_the_server_it_guards_start_moto() -> None:
    starters = {
        path.relative_to(ROOT).as_posix()
        for folder in SEARCHED
        for path in (ROOT / folder).rglob("*.py")
        if ".venv" not in path.parts and STARTS_MOTO.search(path.read_text(encoding="utf-8"))
    }
    allowed = {p.relative_to(ROOT).as_posix() for p in (ENTRY, SERVER, *EXEMPT)}
    allowed.add(Path(__file__).relative_to(ROOT).as_posix())

    assert starters <= allowed, (
        f"moto started outside lockgate_infra.local.fidelity: {sorted(starters - allowed)}"
    )


def test_starting_the_moto_server_installs_the_fixes() -> None:
    # In a fresh interpreter: nothing else in it could have installed them first.
    script = (
        "from lockgate_infra.local import fidelity\n"
        "from lockgate_infra.local.moto_server import MotoServer\n"
        "before = fidelity.installed()\n"
        "server = MotoServer()\n"
        "server.start()\n"
        "server.stop()\n"
        "print(before, fidelity.installed())\n"
    )
    result = subprocess.run(  # noqa: S603 - this interpreter, our script
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )

    assert result.stdout.split() == ["False", "True"]
