"""Every command the README and the docs site show is run (or, where it cannot run here, checked).

The kinds of block and their markers are in ``lockgate_infra.docsite.blocks``. Console blocks run
here on this machine, in the checkout, with ``.venv/bin`` first on PATH, no model key and no
network; a block marked for the local stack gets one ``lockgate local`` for this test session.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from lockgate_infra.docsite.blocks import Block, output_matches, shell_blocks
from tests.support import local_stack_in_thread

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
BLOCKS = [block for page in PAGES for block in shell_blocks(page)]
CONSOLE = [b for b in BLOCKS if b.kind == "console"]
ENTRY_POINTS = [b for b in BLOCKS if b.kind == "entry points"]
AWS_TOOLS = {"aws", "sam", ".venv/bin/sam"}
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=\S*$")
# The environment as this process started: a local stack started later points AWS clients at
# itself through os.environ, which a block that does not ask for it must not inherit.
CLEAN_ENV = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}


def _id(block: Block) -> str:
    return f"{block.path.relative_to(ROOT)}:{block.line}"


def test_every_shell_block_is_run_or_marked_for_a_real_account() -> None:
    unchecked = [_id(b) for b in BLOCKS if b.kind not in ("console", "entry points")]
    assert not unchecked, (
        f"shell blocks neither ```console nor marked <!-- docs: entry points -->: {unchecked}"
    )
    assert CONSOLE, "no console blocks found: the collector is broken"


def _make_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    return set(re.findall(r"^([A-Za-z][A-Za-z0-9_-]*):", text, re.MULTILINE))


def _entry_commands(block: Block) -> Iterator[list[str]]:
    joined = "\n".join(block.body).replace("\\\n", " ")
    for line in joined.splitlines():
        code = line.split(" #", 1)[0].strip()
        for part in re.split(r"\s*&&\s*", code):
            words = shlex.split(part) if part else []
            while words and ASSIGNMENT.match(words[0]):
                words = words[1:]
            if words:
                yield words


@pytest.mark.parametrize("block", ENTRY_POINTS, ids=_id)
def test_each_command_that_cannot_run_here_is_a_real_entry_point(block: Block) -> None:
    from lockgate_infra.cli.main import _parser

    targets = _make_targets()
    for words in _entry_commands(block):
        program = words[0]
        if program == "make":
            assert words[1] in targets, f"{_id(block)}: make {words[1]} is not a Makefile target"
        elif program in ("lockgate", ".venv/bin/lockgate"):
            try:
                _parser().parse_args(words[1:])
            except SystemExit as exc:
                pytest.fail(f"{_id(block)}: the CLI refuses {shlex.join(words)} (exit {exc.code})")
        else:
            assert program in AWS_TOOLS, f"{_id(block)}: {program} is not a command this project documents"


@pytest.fixture(scope="module")
def local_port() -> Iterator[int]:
    """One `lockgate local` for the module, as a reader runs it in another terminal: the demo model
    for the shop and the triage example's scripted model for triage, as Getting started runs it."""
    with local_stack_in_thread(model=["demo", "triage.model:scripted_model"]) as stack:
        yield int(stack.gateway.port)


def _run_block(block: Block, port: int | None) -> list[tuple[int, list[str]]]:
    """Run the block's commands in one shell, in order; (exit code, output lines) for each."""
    script = []
    for number, command in enumerate(block.commands):
        text = command.text if port is None else command.text.replace("127.0.0.1:8787", f"127.0.0.1:{port}")
        script.append(
            f"printf '@@docs-start {number}@@\\n'; {{ {text}\n}} 2>&1; printf '@@docs-rc %s@@\\n' $?"
        )
    env = dict(CLEAN_ENV)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["COLUMNS"] = "100"
    if port is not None:
        env["LOCKGATE_LOCAL_PORT"] = str(port)
    done = subprocess.run(  # noqa: S603 - the page's own commands, in this checkout
        ["bash", "-c", "\n".join(script)],
        check=False,
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    results: list[tuple[int, list[str]]] = []
    lines: list[str] = []
    for line in done.stdout.splitlines():
        if line.startswith("@@docs-start "):
            lines = []
        elif line.startswith("@@docs-rc "):
            results.append((int(line.removeprefix("@@docs-rc ").rstrip("@")), lines))
        else:
            lines.append(line)
    assert len(results) == len(block.commands), f"{_id(block)}: the block stopped early\n{done.stderr}"
    return results


@pytest.mark.slow
@pytest.mark.parametrize("block", CONSOLE, ids=_id)
def test_each_console_block_runs_and_prints_what_the_page_shows(
    block: Block, request: pytest.FixtureRequest
) -> None:
    port = request.getfixturevalue("local_port") if block.local_stack else None
    for command, (code, lines) in zip(block.commands, _run_block(block, port), strict=True):
        shown = "\n".join(lines)
        # A one-line `lockgate: ...` error shown on the page means the command fails (exit 2).
        refused = bool(command.output) and command.output[0].startswith("lockgate: ")
        wanted = command.exit_code or (2 if refused else 0)
        assert code == wanted, (
            f"{_id(block)}: `{command.text}` exited {code}, the page says {wanted}\n{shown}"
        )
        assert output_matches(command.output, lines), (
            f"{_id(block)}: `{command.text}` printed\n{shown}\nbut the page shows\n"
            + "\n".join(command.output)
        )
