"""A worker whose workflows call no MCP server never loads the SDK (about 0.8 s of import)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_worker_runtime_and_the_mcp_modules_but_the_session_load_no_sdk() -> None:
    # Given a fresh interpreter with the layer on its path, as Lambda has it
    code = (
        "import sys\n"
        f"sys.path[:0] = [{str(ROOT / 'layers' / 'core')!r}]\n"
        "import lockgate.runtime.worker\n"
        "import lockgate.mcp.client, lockgate.mcp.pins, lockgate.mcp.definitions, lockgate.mcp.outcomes\n"
        "sdk = ('mcp', 'mcp_types', 'httpx2')\n"
        "print('loaded:', *sorted(m for m in sys.modules if m.split('.')[0] in sdk))\n"
    )
    # When the worker's runtime and every MCP module a non-calling path touches are imported
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True, check=True
    )
    # Then neither the SDK nor its HTTP client was loaded (-X importtime agrees with sys.modules)
    assert out.stdout.splitlines()[-1] == "loaded:"
    imported = [
        line.rsplit("|", 1)[-1].strip() for line in out.stderr.splitlines() if line.startswith("import time:")
    ]
    assert [m for m in imported if m.split(".")[0] in ("mcp", "mcp_types")] == []
    assert "lockgate.mcp.client" in imported and "lockgate.runtime.worker" in imported
