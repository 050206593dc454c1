"""What MCP support costs the agent worker: cold start with and without MCP workflows, and package size.

Start: fresh processes with the template's worker environment (as ``worker_start``), alternating.
Without MCP: the worker of a deployment whose workflows call no MCP server (lockgate.toml's
workflows less those with pinned MCP tools, and no ``[mcp]``): the init (``import app``) and what
its first model call adds (``import anthropic``). With MCP: the shipped worker, whose tickets
workflow registers an MCP server's tools (its pins read, its tools built) at init; the same, then
what the first call to an MCP server adds: importing the client's SDK side
(``lockgate.mcp.session``: the ``mcp`` SDK) and one ``list_tools`` against the example server (in
its own process), the first connection's lazy work included. No init may load the SDK, and the
init without MCP may load none of Lockgate's MCP modules either (a workflow without MCP pays
nothing): ``sys.modules`` is read, and ``-X importtime`` of each init for any ``mcp`` module.

Size: the worker's locked dependencies (``functions/agent_worker/requirements.txt``) installed as
``sam build`` lays them out (wheels unpacked, no bytecode), with and without the packages that only
``mcp`` needs (read from the lock's ``# via`` lines); on disk and zipped. Needs the installer's
cache or PyPI.

Run: ``python -m benchmarks.mcp_cost [--runs 7] [--no-size]``.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from benchmarks.cold_start_children import compile_project
from benchmarks.importtime import parse_importtime
from benchmarks.mcp_size import measure_size, render_size
from benchmarks.worker_start import LAYER_DIR, ROOT, WORKER_DIR, environment, run_child

MARKER = "MCP-COST "
CHILD = f"""
import importlib, json, os, sys, time
with_mcp, url = os.environ["MCP_COST_KIND"] == "mcp", os.environ["MCP_COST_URL"]
sys.path[:0] = sys.argv[1:]
started = time.perf_counter()
app = importlib.import_module("app")
init = time.perf_counter() - started
loaded = sorted(m for m in sys.modules if m == "mcp" or m.startswith(("mcp.", "mcp_types")))
ours = sorted(m for m in sys.modules if m.startswith(("lockgate.mcp", "lockgate.actions.mcp")))
started = time.perf_counter()
import anthropic
anthropic.Anthropic(api_key="not-used", base_url="http://127.0.0.1:9", max_retries=0)
model = time.perf_counter() - started
sdk = listed = 0.0
if with_mcp:
    started = time.perf_counter()
    import lockgate.mcp.session
    sdk = time.perf_counter() - started
    from lockgate.mcp.client import McpClient
    from lockgate.mcp.servers import Credential, ServerSettings
    started = time.perf_counter()
    settings = ServerSettings("tickets", url, credential=Credential.bearer("example-mcp-token"))
    assert McpClient(settings).list_tools().tools
    listed = time.perf_counter() - started
phases = {{"init": init, "model": model, "sdk": sdk, "listed": listed}}
print({MARKER!r} + json.dumps({{**phases, "loaded": loaded, "ours": ours}}))
"""
PHASES = ("init", "model", "sdk", "listed")


@dataclass(frozen=True)
class Sample:
    """One fresh worker process: seconds per phase, and the SDK's modules its init loaded."""

    init: float
    model: float
    sdk: float
    listed: float
    loaded: list[str]
    ours: list[str]  # Lockgate's own MCP modules the init loaded

    @property
    def cold(self) -> float:
        """The cold start without MCP: init and the first model call."""
        return self.init + self.model

    @property
    def client(self) -> float:
        """The cold start with the MCP client imported."""
        return self.cold + self.sdk

    @property
    def first(self) -> float:
        """The cold start to the first MCP answer."""
        return self.cold + self.sdk + self.listed


def sample(with_mcp: bool, url: str, plain_config: Path) -> Sample:
    """One fresh worker process: the shipped config, or (without MCP) ``plain_config``."""
    env = {**environment(False), "MCP_COST_KIND": "mcp" if with_mcp else "plain", "MCP_COST_URL": url}
    if not with_mcp:
        env["LOCKGATE_CONFIG"] = str(plain_config)
    return Sample(**run_child(CHILD, env, MARKER))  # type: ignore[arg-type]


def config_without_mcp(folder: Path) -> Path:
    """The shipped lockgate.toml less every workflow with pinned MCP tools, ``[mcp]`` and their tools'
    approval sections: a deployment whose workflows call no MCP server."""
    import tomlkit

    document = tomlkit.parse((ROOT / "lockgate.toml").read_text(encoding="utf-8"))
    packages = document["workflows"]["packages"]  # type: ignore[index]
    kept = [p for p in packages if not (ROOT / "workflows" / str(p) / "mcp").is_dir()]  # type: ignore[union-attr]
    document["workflows"]["packages"] = kept  # type: ignore[index]
    document.pop("mcp", None)
    tools = document["approvals"]["tools"]  # type: ignore[index]
    for name in [n for n in tools if "__" in n]:  # type: ignore[union-attr]
        del tools[name]  # type: ignore[union-attr]
    path = folder / "lockgate.toml"
    path.write_text(tomlkit.dumps(document), encoding="utf-8")
    return path


def sdk_modules_at_init(config: Path | None = None) -> list[str]:
    """Modules of the ``mcp`` SDK in ``-X importtime`` of the worker's init (``import app``)."""
    code = f"import sys; sys.path[:0] = {[str(WORKER_DIR), str(LAYER_DIR)]!r}; import app"
    env = environment(False) | ({"LOCKGATE_CONFIG": str(config)} if config else {})
    done = subprocess.run(  # noqa: S603 - our own child script
        [sys.executable, "-X", "importtime", "-c", code],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return sorted(
        m for m in parse_importtime(done.stderr) if m == "mcp" or m.startswith(("mcp.", "mcp_types"))
    )


def example_server() -> tuple[subprocess.Popen[str], str]:
    """The example MCP server in its own process, and its URL."""
    server = subprocess.Popen(  # noqa: S603 - our own module
        [sys.executable, "-m", "lockgate_infra.mcp_example", "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert server.stdout is not None
    return server, server.stdout.readline().split(" at ")[1].split(" ")[0]


@dataclass(frozen=True)
class Result:
    """Both kinds of process, alternated, and what the worker's init loaded of the SDK."""

    plain: list[Sample]
    mcp: list[Sample]
    importtime_at_init: list[str]  # the SDK's modules in either init's -X importtime

    def median(self, samples: list[Sample], phase: str) -> float:
        """The median seconds of ``phase``."""
        return statistics.median(getattr(s, phase) for s in samples)

    def paired(self, phase: str) -> float:
        """The median ratio of an MCP process's ``phase`` to the cold start of the plain one before it."""
        return statistics.median(
            getattr(m, phase) / p.cold for m, p in zip(self.mcp, self.plain, strict=True)
        )

    @property
    def loaded_by_init(self) -> list[str]:
        """The SDK's modules any process's init had in ``sys.modules``."""
        return sorted({m for s in self.plain + self.mcp for m in s.loaded})

    @property
    def ours_without_mcp(self) -> list[str]:
        """Lockgate's MCP modules the init of a worker without MCP workflows had in ``sys.modules``."""
        return sorted({m for s in self.plain for m in s.ours})


def measure(runs: int) -> Result:
    """Both kinds of process, alternated, against one example server."""
    # As a built package ships .pyc (PYTHONDONTWRITEBYTECODE=1 would have each child compile ours).
    compile_project(WORKER_DIR, LAYER_DIR, ROOT / "workflows")
    server, url = example_server()
    with tempfile.TemporaryDirectory() as folder:
        plain_config = config_without_mcp(Path(folder))
        try:
            sample(False, url, plain_config), sample(True, url, plain_config)  # warm the page cache
            plain, mcp = [], []
            for _ in range(runs):
                plain.append(sample(False, url, plain_config))
                mcp.append(sample(True, url, plain_config))
        finally:
            server.terminate()
            server.wait(timeout=10)
        importtime = sorted({*sdk_modules_at_init(plain_config), *sdk_modules_at_init()})
    return Result(plain, mcp, importtime)


def render(result: Result) -> str:
    """The start table and its ratios."""
    ms = {
        (kind, phase): f"{result.median(samples, phase) * 1000:.0f} ms"
        for kind, samples in (("plain", result.plain), ("mcp", result.mcp))
        for phase in PHASES
    }
    cold = result.median(result.plain, "cold")
    client = result.median(result.mcp, "client")
    return "\n".join(
        [
            "| worker process | init (import app) | + first model call | + MCP client import "
            "| + first list_tools |",
            "|---|---|---|---|---|",
            f"| no MCP workflow | {ms['plain', 'init']} | {ms['plain', 'model']} | - | - |",
            f"| an MCP workflow | {ms['mcp', 'init']} | {ms['mcp', 'model']} | {ms['mcp', 'sdk']} "
            f"| {ms['mcp', 'listed']} |",
            "",
            f"Ratio init with an MCP workflow registered / without: "
            f"{result.median(result.mcp, 'init') / result.median(result.plain, 'init'):.3f}",
            f"Ratio cold start with the MCP client imported / without: {client / cold:.3f} (medians), "
            f"{result.paired('client'):.3f} (side-by-side pairs)",
            f"Ratio cold start to the first MCP answer / without MCP: "
            f"{result.median(result.mcp, 'first') / cold:.3f} (medians), "
            f"{result.paired('first'):.3f} (pairs)",
            f"The MCP client's import alone / the cold start without MCP: {result.paired('sdk'):.3f}",
            f"mcp SDK modules loaded by the worker's init: {len(result.loaded_by_init)} (sys.modules), "
            f"{len(result.importtime_at_init)} (-X importtime)",
            f"Lockgate's MCP modules loaded by an init without MCP workflows: {len(result.ours_without_mcp)}",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    """Command line: fails if the worker's init loads the SDK."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--no-size", action="store_true", help="skip the package size (needs wheels)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    result = measure(args.runs)
    print(render(result))
    if not args.no_size:
        print()
        print(render_size(measure_size()))
    usage = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = sum(u.ru_utime + u.ru_stime for u in usage)
    print(f"\n{time.perf_counter() - started:.0f} s wall, {cpu / 60:.1f} CPU-minutes")
    return 1 if result.loaded_by_init or result.importtime_at_init or result.ours_without_mcp else 0


if __name__ == "__main__":
    sys.exit(main())
