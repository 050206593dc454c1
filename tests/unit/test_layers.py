"""The layer's packages import only downward, and no module of ours is part of an import cycle.

Every import counts: module level, inside functions and under ``TYPE_CHECKING`` alike, because a
function-level import that closes a cycle is still a cycle a reader has to hold in their head.
The picture this enforces is the one in ``lockgate/__init__.py`` and in docs/architecture.md.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "layers" / "core" / "lockgate"

# Top to bottom; a module may import from its own layer or any layer below it.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("lockgate.runtime",),
    ("lockgate.jobs", "lockgate.evals"),
    ("lockgate.workflows",),
    ("lockgate.approvals",),
    ("lockgate.agent",),
    ("lockgate.actions",),
    ("lockgate.capacity",),
    ("lockgate.model",),
    ("lockgate.inbox",),
    ("lockgate.webhooks",),
    (
        "lockgate.clock",
        "lockgate.config",
        "lockgate.dynamo",
        "lockgate.errors",
        "lockgate.exports",
        "lockgate.freshness",
        "lockgate.http",
        "lockgate.restore",
        "lockgate.schema",
        "lockgate.secrets",
        "lockgate.settings",
        "lockgate.telemetry",
    ),
)
# The authors' facade (lazy, on top of everything) and last release's paths, kept as re-exports.
OUTSIDE_LAYERS = {"lockgate", "lockgate.routing", "lockgate.agent.tools"}
# Approvals may read a task's definition, never drive the loop (it proposes through actions).
FORBIDDEN = {"lockgate.approvals": ("lockgate.agent.loop", "lockgate.agent.tool_calls")}


def modules(package_dir: Path, package: str) -> dict[str, Path]:
    """Dotted module name → file, for every module under ``package_dir``."""
    found = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = path.relative_to(package_dir).with_suffix("").parts
        name = ".".join((package, *parts))
        found[name.removesuffix(".__init__")] = path
    return found


def imports(name: str, path: Path, known: set[str]) -> Iterator[str]:
    """Our modules that ``name`` imports anywhere in its file (a package import names the package)."""
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name if is_package else name.rpartition(".")[0]
                for _ in range(node.level - 1):
                    anchor = anchor.rpartition(".")[0]
                base = f"{anchor}.{base}".rstrip(".")
            targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
        else:
            continue
        for target in targets:
            if target in known:
                yield target
                break


def graph(package_dir: Path, package: str) -> dict[str, set[str]]:
    """Module → the modules of the same package it imports."""
    found = modules(package_dir, package)
    known = set(found)
    return {name: set(imports(name, path, known)) - {name} for name, path in found.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(edges.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def layer_of(module: str) -> int | None:
    """The layer's index from the top, by the longest matching prefix; None outside the layers."""
    if module in OUTSIDE_LAYERS:
        return None
    for depth, members in enumerate(LAYERS):
        if any(module == m or module.startswith(f"{m}.") for m in members):
            return depth
    raise AssertionError(f"{module} is in no layer: add it to LAYERS in {__file__}")


CORE_GRAPH = graph(CORE, "lockgate")


@pytest.mark.parametrize(
    ("package_dir", "package"),
    [
        (CORE, "lockgate"),
        (ROOT / "infra" / "lockgate_infra", "lockgate_infra"),
        (ROOT / "workflows" / "shop", "shop"),
    ],
    ids=["lockgate", "lockgate_infra", "shop"],
)
def test_no_module_is_part_of_an_import_cycle(package_dir: Path, package: str) -> None:
    assert cycles(graph(package_dir, package)) == []


def test_every_import_in_the_layer_goes_down_or_sideways_never_up() -> None:
    upward = [
        f"{source} (layer {layer_of(source)}) imports {target} (layer {layer_of(target)})"
        for source, targets in CORE_GRAPH.items()
        for target in targets
        if layer_of(source) is not None
        and layer_of(target) is not None
        and layer_of(target) < layer_of(source)  # type: ignore[operator]
    ]
    assert upward == []


def test_approvals_never_import_the_agent_loop() -> None:
    for package, banned in FORBIDDEN.items():
        offending = [
            f"{source} imports {target}"
            for source, targets in CORE_GRAPH.items()
            if source.startswith(package)
            for target in targets
            if target.startswith(banned)
        ]
        assert offending == []


def test_the_check_sees_function_level_imports_and_cycles() -> None:
    # Given two modules that import each other, one of them only inside a function
    edges = {"a": {"b"}, "b": {"a"}, "c": {"a"}}
    # Then the cycle is found, and the module that merely uses it is not part of it
    assert cycles(edges) == [["a", "b"]]
    # And in the real graph, an import made inside a function counts like any other
    assert "lockgate.jobs.builtin.sweep_inbox" in CORE_GRAPH["lockgate.jobs.factories"]


def _picture(text: str) -> str:
    """The text of a layer picture from its first package line to the foundations' last line."""
    start = text.index("runtime")
    end = text.index("foundations", start)
    tail = text[end:].split("\n\n", 1)[0].split("```", 1)[0]
    return text[start:end] + tail


@pytest.mark.parametrize("where", ["docs/architecture.md", "layers/core/lockgate/__init__.py"])
def test_the_pictures_of_the_layers_name_every_package_and_foundation_module(where: str) -> None:
    # The docs' "The code, in one picture" and the package docstring are what a newcomer reads:
    # they must show the layers this check enforces, foundation modules included.
    text = (ROOT / where).read_text(encoding="utf-8")
    picture = _picture(text[text.index("The code, in one picture") :] if where.endswith(".md") else text)
    missing = [
        module
        for layer in LAYERS
        for module in layer
        if module.removeprefix("lockgate.").split(".")[0] not in picture
    ]
    assert missing == [], f"{where} does not show {missing}"
