"""Each tree's packages import only downward, and no module of ours is part of an import cycle.

Two trees are layered: the core (``lockgate``) and the tools around it (``lockgate_infra``), which
import the core freely; the core never imports the tools. Every import counts: module level, inside
functions and under ``TYPE_CHECKING`` alike, because a function-level import that closes a cycle is
still a cycle a reader has to hold in their head. The pictures this enforces are the ones in
``lockgate/__init__.py``, ``lockgate_infra/__init__.py`` and docs/architecture.md.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Tree:
    """A package and its layers, top to bottom: a module may import from its own layer or any below."""

    package: str
    directory: Path
    layers: tuple[tuple[str, ...], ...]
    outside: frozenset[str]  # in no layer, so unchecked: facades and re-exports
    picture_top: str  # the package a picture of the layers starts with (``foundations`` ends it)

    def layer_of(self, module: str) -> int | None:
        """The layer's index from the top, by the longest matching prefix; None outside the layers."""
        if module in self.outside:
            return None
        for depth, members in enumerate(self.layers):
            if any(module == m or module.startswith(f"{m}.") for m in members):
                return depth
        raise AssertionError(f"{module} is in no layer: add it to {self.package}'s layers in {__file__}")


CORE = Tree(
    "lockgate",
    ROOT / "layers" / "core" / "lockgate",
    (
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
        ("lockgate.mcp",),  # MCP servers' tools: definitions, pins, the client; only foundations below
        (
            "lockgate.clock",
            "lockgate.config",
            "lockgate.declared",
            "lockgate.dynamo",
            "lockgate.errors",
            "lockgate.exports",
            "lockgate.freshness",
            "lockgate.http",
            "lockgate.index_shards",
            "lockgate.restore",
            "lockgate.schema",
            "lockgate.secrets",
            "lockgate.settings",
            "lockgate.shards",
            "lockgate.telemetry",
            "lockgate.tracing",
        ),
    ),
    # The authors' facade (lazy, on top of everything) and last release's paths, kept as re-exports.
    frozenset({"lockgate", "lockgate.routing", "lockgate.agent.tools"}),
    "runtime",
)
# The commands a person runs on top; each tool above the tools it drives (the cost meter runs
# chaos's traffic, chaos runs the eval rig's shop, the rig provisions from local's template reader,
# the local stack serves the stub's model); what several of them share at the bottom.
INFRA = Tree(
    "lockgate_infra",
    ROOT / "infra" / "lockgate_infra",
    (
        ("lockgate_infra.docsite",),
        ("lockgate_infra.cli", "lockgate_infra.deploy", "lockgate_infra.prices"),
        ("lockgate_infra.cost",),
        ("lockgate_infra.chaos",),
        ("lockgate_infra.evals", "lockgate_infra.testing"),
        ("lockgate_infra.local",),
        ("lockgate_infra.stub", "lockgate_infra.mcp_example"),
        (
            "lockgate_infra.api_calls",
            "lockgate_infra.dead_letters",
            "lockgate_infra.failures",
            "lockgate_infra.inbox_ops",
            "lockgate_infra.options",
            "lockgate_infra.serving",
            "lockgate_infra.workflow_path",
        ),
    ),
    frozenset({"lockgate_infra"}),  # the package itself: only its docstring
    "docsite",
)
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


def graph(package_dir: Path, package: str, known: set[str] | None = None) -> dict[str, set[str]]:
    """Module → the modules of the same package it imports (of ``known`` instead, when given)."""
    found = modules(package_dir, package)
    known = set(found) if known is None else known
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


CORE_GRAPH = graph(CORE.directory, CORE.package)
INFRA_GRAPH = graph(INFRA.directory, INFRA.package)


def upward(edges: dict[str, set[str]], tree: Tree) -> list[str]:
    """Every import in ``edges`` that goes from a layer of ``tree`` to a higher one."""
    return [
        f"{source} (layer {tree.layer_of(source)}) imports {target} (layer {tree.layer_of(target)})"
        for source, targets in sorted(edges.items())
        for target in sorted(targets)
        if tree.layer_of(source) is not None
        and tree.layer_of(target) is not None
        and tree.layer_of(target) < tree.layer_of(source)  # type: ignore[operator]
    ]


@pytest.mark.parametrize(
    ("package_dir", "package"),
    [
        (CORE.directory, CORE.package),
        (INFRA.directory, INFRA.package),
        (ROOT / "workflows" / "shop", "shop"),
    ],
    ids=["lockgate", "lockgate_infra", "shop"],
)
def test_no_module_is_part_of_an_import_cycle(package_dir: Path, package: str) -> None:
    assert cycles(graph(package_dir, package)) == []


@pytest.mark.parametrize(
    ("tree", "edges"), [(CORE, CORE_GRAPH), (INFRA, INFRA_GRAPH)], ids=["lockgate", "lockgate_infra"]
)
def test_every_import_in_a_tree_goes_down_or_sideways_never_up(
    tree: Tree, edges: dict[str, set[str]]
) -> None:
    assert upward(edges, tree) == []


def test_the_core_never_imports_the_tools() -> None:
    # Given every module of both trees as something an import can name
    known = set(modules(CORE.directory, CORE.package)) | set(modules(INFRA.directory, INFRA.package))
    # Then no core module imports one of the tools' (the weekly eval's job code is named in the
    # job registry by its module path, imported by name only when the job runs, where it is carried)
    reaching = [
        f"{source} imports {target}"
        for source, targets in sorted(graph(CORE.directory, CORE.package, known).items())
        for target in sorted(targets)
        if target.partition(".")[0] == INFRA.package
    ]
    assert reaching == []


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


def test_a_tool_reaching_up_into_the_cli_is_reported() -> None:
    # Given the demo importing from the CLI (how `local` and `cli` once imported each other)
    edges = {"lockgate_infra.local.demo": {"lockgate_infra.cli.inbox", "lockgate_infra.inbox_ops"}}
    # Then that import is reported as upward, and the one into the shared foundations is not
    assert upward(edges, INFRA) == [
        "lockgate_infra.local.demo (layer 5) imports lockgate_infra.cli.inbox (layer 1)"
    ]


def _picture(text: str, top: str) -> str:
    """The text of a layer picture from its first package line to the foundations' last line."""
    start = text.index(top)
    end = text.index("foundations", start)
    tail = text[end:].split("\n\n", 1)[0].split("```", 1)[0]
    return text[start:end] + tail


@pytest.mark.parametrize(
    ("where", "heading", "tree"),
    [
        ("docs/architecture.md", "The code, in one picture", CORE),
        ("layers/core/lockgate/__init__.py", "", CORE),
        ("docs/architecture.md", "The tools, in one picture", INFRA),
        ("infra/lockgate_infra/__init__.py", "", INFRA),
    ],
    ids=["docs-lockgate", "lockgate", "docs-lockgate_infra", "lockgate_infra"],
)
def test_the_pictures_of_the_layers_name_every_package_and_foundation_module(
    where: str, heading: str, tree: Tree
) -> None:
    # The docs' pictures and the package docstrings are what a newcomer reads: they must show
    # the layers this check enforces, foundation modules included.
    text = (ROOT / where).read_text(encoding="utf-8")
    picture = _picture(text[text.index(heading) :], tree.picture_top)
    missing = [
        module
        for layer in tree.layers
        for module in layer
        if module.removeprefix(f"{tree.package}.").split(".")[0] not in picture
    ]
    assert missing == [], f"{where} does not show {missing}"
